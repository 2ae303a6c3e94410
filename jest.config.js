// Test tiers by file suffix (see docs/DEVELOPERS.md): unit = pure, no I/O;
// int = real Postgres; e2e = the app over HTTP/GraphQL.
const fs = require('node:fs');
const path = require('node:path');

const swcConfig = JSON.parse(fs.readFileSync(path.join(__dirname, '.swcrc'), 'utf8'));
delete swcConfig.$schema;

const shared = {
  rootDir: __dirname,
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['@swc/jest', swcConfig] },
  moduleFileExtensions: ['ts', 'js', 'json'],
  moduleNameMapper: {
    '^@creditlab/(estimators|db|events|client|envs)$': '<rootDir>/libs/$1/src',
    '^@creditlab/(estimators|db|events|client|envs)/(.*)$': '<rootDir>/libs/$1/src/$2',
  },
  testPathIgnorePatterns: ['/node_modules/', '/dist/', '/dist-test/'],
};

const tier = (name, suffix) => ({
  ...shared,
  displayName: name,
  testMatch: [`<rootDir>/{apps,libs,test}/**/*.${suffix}.spec.ts`],
});

module.exports = {
  // One embedded PostgreSQL for the whole run; each int/e2e spec file makes its own database on it.
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  transform: shared.transform,
  moduleNameMapper: shared.moduleNameMapper,
  projects: [tier('unit', 'unit'), tier('int', 'int'), tier('e2e', 'e2e')],
};
