import { expect, test } from '@jest/globals';
import { pct } from '../src/components/format';

test('a rate reads as a whole percentage, a missing one as a dash', () => {
  expect(pct(0.625)).toBe('63 %');
  expect(pct(1)).toBe('100 %');
  expect(pct(0)).toBe('0 %');
  expect(pct(-0.25)).toBe('-25 %');
  expect([null, undefined, Number.NaN].map(pct)).toEqual(['–', '–', '–']);
});

test('a value named like a rate that is none shows as the number, never "Infinity %"', () => {
  // 100 × 1e307 overflows to Infinity; a metric may hold any finite number.
  expect(pct(1e307)).toBe('1.00e+307');
  expect(pct(-3e305)).toBe('-3.00e+305');
  expect(pct(12345)).toBe('12300');
  expect(pct(2.5)).toBe('250 %'); // over 1, still a percentage a reader can place
});
