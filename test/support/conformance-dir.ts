import path from 'node:path';

/**
 * The conformance fixtures (rollout batches with expected advantages): `verl-agent/` from the public
 * reference code, `spec/` from an independent implementation of docs/estimators.md. They are data,
 * copied in verbatim: never edit them to make a test pass.
 */
export const CONFORMANCE_DIR = path.resolve(__dirname, '../fixtures/conformance');
