import { TextDictionary, textId, textIdCacheSize } from '../src/rollouts/text-dictionary';

const RUN = '0b7e4a2c-9d3f-4e1a-8b6c-5f2d1a3e4c7b';

/**
 * Text ids are stored (steps reference texts by them) and a rebuild derives them again, so the
 * derivation must never change: the first 8 bytes of the text's UTF-8 SHA-256, as a signed bigint.
 */
test.each([
  ['open fridge', 520386851896842550n],
  ['Kitchen. A fridge — 冷蔵庫 😀', 6633820064172005339n],
  ['', -2039914840885289964n],
])('textId(%j) is the first 8 bytes of its SHA-256', (text, id) => {
  expect(textId(text)).toBe(id);
});

/** The id as a COPY row carries it: its int8's two words (high signed), put back together. */
const fromWords = ({ high, low }: { high: number; low: number }) =>
  (BigInt(high) << 32n) | BigInt(low);

test('the dictionary gives every text the id textId derives, in words and in decimal, however often it is asked', () => {
  const texts = ['open fridge', 'Kitchen. A fridge — 冷蔵庫 😀', '', 'x'.repeat(1000)];
  for (let session = 0; session < 3; session++) {
    const dictionary = new TextDictionary(undefined as never, RUN);
    for (const text of [...texts, ...texts]) {
      const id = dictionary.id(text);
      expect(fromWords(id)).toBe(textId(text));
      expect(id.decimal).toBe(String(textId(text)));
    }
  }
});

test('the cache stays within its bound as it turns over, and ids stay right (texts past its bound, then the first again)', () => {
  const dictionary = new TextDictionary(undefined as never, RUN);
  const text = (i: number) => `${i} ${'observation '.repeat(5_000)}`; // about 60 kB each
  let largest = 0;
  for (let i = 0; i < 1_000; i++) {
    dictionary.id(text(i)); // 1,000 texts of 60 kB, 120 MB as the cache counts them: past its bound
    largest = Math.max(largest, textIdCacheSize().bytes);
  }
  expect(largest).toBeLessThanOrEqual(32 * 1024 * 1024);
  expect(largest).toBeGreaterThan(16 * 1024 * 1024); // it did fill up: the previous generation is kept
  for (const i of [0, 1, 500, 999]) {
    const fresh = new TextDictionary(undefined as never, RUN).id(text(i));
    expect(fresh.decimal).toBe(String(textId(text(i))));
    expect(fromWords(fresh)).toBe(textId(text(i)));
  }
});
