import { spawnSync } from 'node:child_process';
import path from 'node:path';

/** The lint rules CI relies on catch what they are there for (a fixture full of such mistakes). */
test('floating promises, promises passed as callbacks, focused and skipped tests are lint errors', () => {
  const r = spawnSync(
    process.execPath,
    [
      path.resolve(__dirname, '../node_modules/eslint/bin/eslint.js'),
      '--no-ignore',
      '--format',
      'json',
      'test/fixtures/lint/mistakes.fixture.ts',
    ],
    { cwd: path.resolve(__dirname, '..'), encoding: 'utf8', timeout: 120_000 },
  );
  expect(r.status).toBe(1);
  const [result] = JSON.parse(r.stdout) as { messages: { ruleId: string; severity: number }[] }[];
  const rules = result!.messages.filter((m) => m.severity === 2).map((m) => m.ruleId);
  expect(rules).toEqual(
    expect.arrayContaining([
      '@typescript-eslint/no-floating-promises',
      '@typescript-eslint/no-misused-promises',
      'jest/no-focused-tests',
      'jest/no-disabled-tests',
    ]),
  );
});

/** Lints `source` as if it were the file at `file` (a name the lint config lets stand in for a real one). */
function lintAs(file: string, source: string): string[] {
  const r = spawnSync(
    process.execPath,
    [
      path.resolve(__dirname, '../node_modules/eslint/bin/eslint.js'),
      '--format',
      'json',
      '--stdin',
      '--stdin-filename',
      file,
    ],
    { cwd: path.resolve(__dirname, '..'), input: source, encoding: 'utf8', timeout: 120_000 },
  );
  const [result] = JSON.parse(r.stdout) as { messages: { ruleId: string; message: string }[] }[];
  return result!.messages.map((m) => `${m.ruleId}: ${m.message}`);
}

test('dependencies point one way: libs never import apps, tests or benchmarks; apps never import tests or benchmarks', () => {
  const lib = lintAs(
    'libs/client/src/lint-check.ts',
    `import { Database } from '../../../apps/server/src/database/database';
import { ADMIN_KEY } from '../../../test/support/test-server';
import { fmt } from '../../../bench/support/bench-report';
import { seededRandom } from '../../random/src/random';
export const x = [Database, ADMIN_KEY, fmt, seededRandom];\n`,
  );
  expect(lib.filter((m) => m.includes('a library never depends on'))).toHaveLength(3);
  expect(lib.filter((m) => m.includes('by its package name'))).toHaveLength(1);
  const app = lintAs(
    'apps/trainer/src/lint-check.ts',
    `import { ADMIN_KEY } from '../../../test/support/test-server';
import { fmt } from '../../../bench/support/bench-report';
export const x = [ADMIN_KEY, fmt];\n`,
  );
  expect(app.filter((m) => m.includes('apps never depend on tests or benchmarks'))).toHaveLength(2);
});

test('the estimator library stays free of Nest, databases, the network and other Creditlab packages', () => {
  const messages = lintAs(
    'libs/estimators/src/lint-check.ts',
    `import { Injectable } from '@nestjs/common';
import pg from 'pg';
import { request } from 'node:http';
import { CreditlabClient } from '@creditlab/client';
export const x = [Injectable, pg, request, CreditlabClient];\n`,
  );
  expect(messages.filter((m) => m.startsWith('no-restricted-imports'))).toHaveLength(4);
});
