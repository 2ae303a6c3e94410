import { clientAddress } from '../src/access/unknown-key-throttle';

test('lookups are counted per IPv4 address, per IPv6 /64, and for closed connections together', () => {
  expect(clientAddress('203.0.113.7')).toBe('203.0.113.7');
  // The same client over IPv4 and IPv4 mapped into IPv6.
  expect(clientAddress('::ffff:203.0.113.7')).toBe('203.0.113.7');
  // Every address of one /64, however written, is one budget; the next /64 is another.
  const prefix = '2001:db8:0:12::/64';
  for (const a of ['2001:db8:0:12::1', '2001:0db8:0000:0012:ffff:1:2:3', '2001:DB8:0:12:0:0:0:9'])
    expect(clientAddress(a)).toBe(prefix);
  expect(clientAddress('2001:db8:0:13::1')).toBe('2001:db8:0:13::/64');
  expect(clientAddress('::1')).toBe('0:0:0:0::/64');
  expect(clientAddress('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  expect(clientAddress(undefined)).toBe('closed');
});
