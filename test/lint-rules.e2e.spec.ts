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
