import { isLoopback, noKeyAdvice } from '../src/access/authenticate';

test('loopback peers are this machine, in every form Node reports them', () => {
  for (const a of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1'])
    expect(isLoopback(a)).toBe(true);
  for (const a of [
    '10.0.0.5',
    '::ffff:10.0.0.5',
    '192.168.1.127',
    'fe80::1',
    '1127.0.0.1',
    undefined,
  ])
    expect(isLoopback(a)).toBe(false);
});

test('the credentials file is named to callers on this machine only', () => {
  const file = '/home/lab/.creditlab/credentials.json';
  expect(noKeyAdvice(file, true)).toContain(file);
  const remote = noKeyAdvice(file, false);
  expect(remote).not.toContain(file);
  expect(remote).not.toContain('/');
  expect(remote).toContain('Authorization: Bearer <key>');
});
