// The tier's time limit for every test and hook of a spec file (the numbers are in jest.config.js).
jest.setTimeout((globalThis as { CREDITLAB_TIMEOUT_MS?: number }).CREDITLAB_TIMEOUT_MS ?? 300_000);
