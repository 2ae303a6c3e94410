import { APPEND_PHASES, AppendClock } from '../apps/server/src/rollouts/append-clock';

test('each lap counts the time since the one before as its phase, and the phases add up to the whole', () => {
  const times = [100, 103, 110, 110.5, 130, 131];
  const clock = new AppendClock(() => times.shift() as number);
  clock.lap('read'); // 3 ms
  clock.lap('lock'); // 7 ms
  clock.lap('read'); // 0.5 ms more reading (the next chunk's events)
  clock.lap('write'); // 19.5 ms
  clock.lap('commit'); // 1 ms
  const seconds = new Map(clock.seconds());
  expect([...seconds.keys()]).toEqual([...APPEND_PHASES]);
  expect(seconds.get('read')).toBeCloseTo(0.0035, 12);
  expect(seconds.get('lock')).toBeCloseTo(0.007, 12);
  expect(seconds.get('write')).toBeCloseTo(0.0195, 12);
  expect(seconds.get('commit')).toBeCloseTo(0.001, 12);
  for (const phase of ['connect', 'check', 'project', 'rollouts', 'pack'] as const)
    expect(seconds.get(phase)).toBe(0);
  const total = [...seconds.values()].reduce((a, b) => a + b, 0);
  expect(total).toBeCloseTo((131 - 100) / 1000, 12);
});
