// Test tiers by file suffix (see docs/DEVELOPERS.md): unit = pure, no I/O;
// int = real Postgres; e2e = the app over HTTP/GraphQL; pooler = behind a PgBouncer of the spec's
// own (needs the pgbouncer binary: a project only when CREDITLAB_TEST_PGBOUNCER names it, as
// `npm run test:pgbouncer` does).
const fs = require('node:fs');
const path = require('node:path');

const swcConfig = JSON.parse(fs.readFileSync(path.join(__dirname, '.swcrc'), 'utf8'));
delete swcConfig.$schema;

/** Test-only dependencies published only as ES modules (hyparquet reads exported Parquet back). */
const ESM_ONLY = ['hyparquet'];

const shared = {
  rootDir: __dirname,
  // Node's environment, plus: whatever a spec file started is stopped when it ends (test/support).
  testEnvironment: '<rootDir>/test/support/test-environment.ts',
  transform: {
    '^.+\\.ts$': ['@swc/jest', swcConfig],
    // Packages published only as ES modules, which Jest's CommonJS module system cannot load.
    [`/node_modules/(${ESM_ONLY.join('|')})/.+\\.js$`]: ['@swc/jest', swcConfig],
  },
  transformIgnorePatterns: [`/node_modules/(?!(${ESM_ONLY.join('|')})/)`],
  moduleFileExtensions: ['ts', 'js', 'json'],
  moduleNameMapper: {
    '^@creditlab/([a-z-]+)$': '<rootDir>/libs/$1/src',
    '^@creditlab/([a-z-]+)/(.*)$': '<rootDir>/libs/$1/src/$2',
  },
  testPathIgnorePatterns: ['/node_modules/', '/dist/', '/dist-test/'],
};

/**
 * Timeouts, the only place they are set: generous, since CI machines are often loaded (2 cores
 * shared with other jobs); a test or hook that exceeds them fails, and its processes are stopped.
 * Hooks (beforeAll starting a server) get the same limit as tests.
 */
const TIMEOUT_MS = { unit: 60_000, int: 120_000, e2e: 300_000, pooler: 300_000 };

const tier = (name, suffix) => ({
  ...shared,
  displayName: name,
  testMatch: [`<rootDir>/{apps,libs,test}/**/*.${suffix}.spec.ts`],
  // Jest reads testTimeout from the global config only; each tier's limit goes through a global.
  globals: { CREDITLAB_TIMEOUT_MS: TIMEOUT_MS[name] },
  setupFilesAfterEnv: ['<rootDir>/test/support/timeouts.ts'],
});

module.exports = {
  // Two spec files at a time, whatever the core count (Jest's default is one less than the cores: a
  // single worker on 2). The specs mostly wait, on servers starting, PostgreSQL, child processes and
  // the browser, so two overlap well even on 2 cores: 16 → 10 minutes for the whole suite there
  // (docs/DEVELOPERS.md). Not more: each spec's servers hold up to about 30 connections of the shared
  // test PostgreSQL, which allows 100.
  maxWorkers: 2,
  // One embedded PostgreSQL for the whole run; each int/e2e spec file makes its own database on it.
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  transform: shared.transform,
  transformIgnorePatterns: shared.transformIgnorePatterns,
  moduleNameMapper: shared.moduleNameMapper,
  // The pooler tier only where PgBouncer is named (`npm run test:pgbouncer`): a bare `npx jest` runs the rest.
  projects: [
    tier('unit', 'unit'),
    tier('int', 'int'),
    tier('e2e', 'e2e'),
    ...(process.env.CREDITLAB_TEST_PGBOUNCER ? [tier('pooler', 'pooler')] : []),
  ],
};
