import { ConfigError, loadConfig } from '../src/config/app-config';
import { parseByteSize } from '../src/config/byte-size';

test('a size is bytes, or bytes with a binary unit; a decimal unit or anything else is refused', () => {
  expect(parseByteSize('268435456')).toBe(268435456);
  expect(parseByteSize('256MiB')).toBe(256 * 2 ** 20);
  expect(parseByteSize(' 1.5 GiB ')).toBe(1.5 * 2 ** 30);
  expect(parseByteSize('64KiB')).toBe(65536);
  expect(parseByteSize('2TiB')).toBe(2 * 2 ** 40);
  expect(parseByteSize('7B')).toBe(7);
  for (const bad of ['2GB', '2gib', '1.5', '-1', '1e6', 'MiB', '', 'lots'])
    expect(parseByteSize(bad)).toBeUndefined();
});

test('size settings take units, and a refusal names the setting and what it takes', () => {
  const limits = (env: Record<string, string>) => loadConfig(env).limits;
  expect(limits({ CREDITLAB_MAX_CHECKPOINT_BYTES: '512MiB' }).maxCheckpointBytes).toBe(2 ** 29);
  expect(limits({ CREDITLAB_MAX_LINE_BYTES: '1.5KiB' }).maxLineBytes).toBe(1536);
  expect(limits({ CREDITLAB_MAX_REQUEST_BYTES: '16GiB' }).maxRequestBytes).toBe(16 * 2 ** 30);
  expect(loadConfig({ CREDITLAB_INGEST_THREAD_MIN_BYTES: '128KiB' }).ingestThreadMinBytes).toBe(
    131072,
  );
  expect(loadConfig({ CREDITLAB_INGEST_THREAD_MIN_BYTES: 'off' }).ingestThreadMinBytes).toBe(
    undefined,
  );
  expect(limits({}).maxCheckpointBytes).toBe(256 * 2 ** 20); // the defaults are unchanged
  const refusal = (env: Record<string, string>) => {
    try {
      loadConfig(env);
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      return (e as Error).message;
    }
    throw new Error(`accepted ${JSON.stringify(env)}`);
  };
  expect(refusal({ CREDITLAB_MAX_CHECKPOINT_BYTES: '2GB' })).toContain(
    'CREDITLAB_MAX_CHECKPOINT_BYTES: expected bytes, such as 268435456 or 256MiB (units B, KiB, MiB, GiB, TiB), got "2GB"',
  );
  expect(refusal({ CREDITLAB_INGEST_THREAD_MIN_BYTES: 'lots' })).toContain(
    'CREDITLAB_INGEST_THREAD_MIN_BYTES: expected "off" or bytes',
  );
  expect(refusal({ CREDITLAB_MAX_LINE_BYTES: '100' })).toContain(
    'CREDITLAB_MAX_LINE_BYTES: at least 1024 bytes, got "100"',
  );
  expect(refusal({ CREDITLAB_MAX_CHECKPOINT_BYTES: '2GiB' })).toContain(
    'at most 1073741824 (1 GiB) while checkpoints are stored in the database',
  );
});

test('a setting set to nothing is unset: its default, not a refusal', () => {
  const config = loadConfig({
    DATABASE_URL: '',
    CREDITLAB_CHECKPOINT_BUCKET: '',
    CREDITLAB_MAX_CHECKPOINT_BYTES: '',
    PORT: '',
  });
  expect(config.databaseUrl).toBeUndefined();
  expect(config.checkpointBucket).toBeUndefined();
  expect(config.limits.maxCheckpointBytes).toBe(256 * 2 ** 20);
  expect(config.port).toBe(4000);
});
