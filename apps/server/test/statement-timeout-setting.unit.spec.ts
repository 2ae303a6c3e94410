import { ConfigError, loadConfig } from '../src/config/app-config';

/**
 * CREDITLAB_STATEMENT_TIMEOUT_SECONDS becomes PostgreSQL's statement_timeout, a 32-bit count of
 * milliseconds: a value past it is refused at start, naming the setting, rather than failing every
 * read connection once open.
 */
test('the statement limit is refused past what PostgreSQL can hold, and taken up to it', () => {
  const limit = (seconds: string) =>
    loadConfig({ CREDITLAB_STATEMENT_TIMEOUT_SECONDS: seconds }).connections.statementTimeoutMs;
  expect(limit('2147483')).toBe(2_147_483_000);
  expect(limit('0')).toBe(0);
  expect(() => limit('2147484')).toThrow(ConfigError);
  expect(() => limit('2147484')).toThrow(/CREDITLAB_STATEMENT_TIMEOUT_SECONDS/);
  expect(() => limit('-1')).toThrow(/CREDITLAB_STATEMENT_TIMEOUT_SECONDS/);
});
