import { loadConfig, retiredSettingsIn } from '../src/config/app-config';

describe('retired settings', () => {
  test('CREDITLAB_CHECKPOINT_MEMORY_BYTES still set is named in a warning, and the server starts all the same', () => {
    const env = { CREDITLAB_CHECKPOINT_MEMORY_BYTES: String(4 * 1024 * 1024) };
    expect(() => loadConfig(env)).not.toThrow();
    expect(retiredSettingsIn(env)).toEqual([
      expect.stringMatching(
        /^CREDITLAB_CHECKPOINT_MEMORY_BYTES is set but no longer used: checkpoint uploads are stored in parts as they arrive/,
      ),
    ]);
    expect(retiredSettingsIn({})).toEqual([]);
  });
});
