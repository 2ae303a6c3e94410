import { textId } from '../src/rollouts/text-dictionary';

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
