import { ConfigError, loadConfig } from '../src/config/app-config';

const MIB = 1024 * 1024;

describe('CREDITLAB_CHECKPOINT_MEMORY_BYTES', () => {
  test('defaults to room for four of the largest checkpoints', () => {
    expect(loadConfig({}).limits.checkpointMemoryBytes).toBe(4 * 256 * MIB);
    const small = loadConfig({ CREDITLAB_MAX_CHECKPOINT_BYTES: String(MIB) });
    expect(small.limits.checkpointMemoryBytes).toBe(4 * MIB);
  });

  test('less than the largest checkpoint is refused at start, saying why', () => {
    const load = () =>
      loadConfig({
        CREDITLAB_MAX_CHECKPOINT_BYTES: String(8 * MIB),
        CREDITLAB_CHECKPOINT_MEMORY_BYTES: String(4 * MIB),
      });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(
      'CREDITLAB_CHECKPOINT_MEMORY_BYTES: 4194304 is less than CREDITLAB_MAX_CHECKPOINT_BYTES (8388608): the largest checkpoint could never be uploaded',
    );
    expect(
      loadConfig({
        CREDITLAB_MAX_CHECKPOINT_BYTES: String(8 * MIB),
        CREDITLAB_CHECKPOINT_MEMORY_BYTES: String(8 * MIB),
      }).limits.checkpointMemoryBytes,
    ).toBe(8 * MIB);
  });
});
