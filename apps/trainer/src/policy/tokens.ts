// Bound once, as in libs/random: Jest's vm context makes each lookup of the global `Math` slow.
const { imul } = Math;

/** Hashed bag-of-words: lower-cased word and number tokens, each mapped by FNV-1a into `vocab` buckets. */
export function tokenIds(text: string, vocab: number): number[] {
  const out: number[] = [];
  for (const word of text.toLowerCase().match(/[a-z]+|\d+/g) ?? []) {
    let h = 0x811c9dc5;
    for (let i = 0; i < word.length; i++) h = imul(h ^ word.charCodeAt(i), 0x01000193);
    out.push((h >>> 0) % vocab);
  }
  return out;
}

/**
 * Rows of a "bag" matrix [rows, vocab]: row i averages the tokens of texts[i].
 * Dense, because vocab is small (a few thousand) and this feeds one matMul.
 */
export function bagMatrix(texts: string[], vocab: number): Float32Array {
  const m = new Float32Array(texts.length * vocab);
  texts.forEach((t, i) => {
    const ids = tokenIds(t, vocab);
    for (const id of ids) m[i * vocab + id] = (m[i * vocab + id] as number) + 1 / ids.length;
  });
  return m;
}
