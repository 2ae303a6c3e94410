// Bound once: under Jest, code runs in a vm context where every lookup of a global such as `Math`
// goes through the context's interceptor (about 400 ns here), which made test-data generation
// several times slower in the suite than anywhere else.
const { imul } = Math;

/** mulberry32: small, fast and seedable, so a task is the same on every machine. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = imul(t ^ (t >>> 15), t | 1);
    t ^= t + imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const pick = <T>(rand: () => number, xs: readonly T[]): T =>
  xs[Math.floor(rand() * xs.length)] as T;

/** Fisher–Yates on a copy: the same order for the same random stream, on any engine. */
export function shuffle<T>(rand: () => number, xs: readonly T[]): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}
