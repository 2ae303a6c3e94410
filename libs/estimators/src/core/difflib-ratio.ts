import { typedReads } from '../typed-arrays';

const { intAt } = typedReads;

/**
 * Python's `difflib.SequenceMatcher(None, a, b).ratio()`, reproduced exactly
 * (docs/estimators.md §1.4.3): Ratcliff–Obershelp matching blocks with CPython's auto-junk rule
 * (when len(b) ≥ 200, characters occurring more than ⌊len(b)/100⌋ + 1 times in
 * b cannot seed a match, but can extend one). Strings are compared by Unicode
 * code point, as Python does, not by UTF-16 unit.
 *
 * `b` is the fixed side (GiGPO compares each new record against a group's
 * representative), so its index is built once per representative.
 */
export class SequenceRatio {
  private readonly b: Int32Array;
  /** b2j: code point → ascending positions in b (popular characters removed). */
  private readonly b2j = new Map<number, Int32Array>();
  private readonly counts = new Map<number, number>();
  private prevLen: Int32Array;
  private curLen: Int32Array;

  constructor(b: string) {
    this.b = codePoints(b);
    const positions = new Map<number, number[]>();
    this.b.forEach((c, j) => {
      const list = positions.get(c);
      if (list) list.push(j);
      else positions.set(c, [j]);
    });
    const n = this.b.length;
    const popularAbove = n >= 200 ? Math.floor(n / 100) + 1 : Infinity;
    for (const [c, list] of positions) {
      this.counts.set(c, list.length);
      if (list.length <= popularAbove) this.b2j.set(c, Int32Array.from(list));
    }
    this.prevLen = new Int32Array(n + 1);
    this.curLen = new Int32Array(n + 1);
  }

  /** ratio(a, this.b) = 2M / (len(a) + len(b)), 1 when both are empty. */
  ratio(aText: string): number {
    const a = codePoints(aText);
    const total = a.length + this.b.length;
    return total === 0 ? 1 : (2 * this.matches(a)) / total;
  }

  /**
   * An upper bound of `ratio(a)` that costs O(len a): the multiset intersection
   * (CPython's quick_ratio). Written with the same formula as `ratio`, so
   * `upperBound(a) < θ` proves `ratio(a) < θ` in floating point too.
   */
  upperBound(aText: string): number {
    const a = codePoints(aText);
    const total = a.length + this.b.length;
    if (total === 0) return 1;
    const avail = new Map<number, number>();
    let common = 0;
    for (const c of a) {
      const left = avail.get(c) ?? this.counts.get(c) ?? 0;
      if (left > 0) common++;
      avail.set(c, left - 1);
    }
    return (2 * common) / total;
  }

  /** Total size M of the matching blocks. */
  private matches(a: Int32Array): number {
    let total = 0;
    const stack: [number, number, number, number][] = [[0, a.length, 0, this.b.length]];
    for (let range = stack.pop(); range; range = stack.pop()) {
      const [alo, ahi, blo, bhi] = range;
      const [i, j, k] = this.longestMatch(a, alo, ahi, blo, bhi);
      if (k === 0) continue;
      total += k;
      if (alo < i && blo < j) stack.push([alo, i, blo, j]);
      if (i + k < ahi && j + k < bhi) stack.push([i + k, ahi, j + k, bhi]);
    }
    return total;
  }

  /** CPython's find_longest_match, with the j2len dictionaries as two reusable arrays. */
  private longestMatch(
    a: Int32Array,
    alo: number,
    ahi: number,
    blo: number,
    bhi: number,
  ): [number, number, number] {
    const b = this.b;
    let bestI = alo;
    let bestJ = blo;
    let best = 0;
    // prevLen[j + 1] = length of the common run ending at (a[i−1], b[j]); 0 when untouched.
    let prev = this.prevLen;
    let cur = this.curLen;
    let prevTouched: number[] = [];
    for (let i = alo; i < ahi; i++) {
      const curTouched: number[] = [];
      const positions = this.b2j.get(intAt(a, i));
      if (positions) {
        for (let p = 0; p < positions.length; p++) {
          const j = intAt(positions, p);
          if (j < blo) continue;
          if (j >= bhi) break;
          const k = intAt(prev, j) + 1;
          cur[j + 1] = k;
          curTouched.push(j + 1);
          if (k > best) {
            bestI = i - k + 1;
            bestJ = j - k + 1;
            best = k;
          }
        }
      }
      for (const t of prevTouched) prev[t] = 0;
      [prev, cur] = [cur, prev];
      prevTouched = curTouched;
    }
    for (const t of prevTouched) prev[t] = 0;
    // Extend over characters that could not seed a match (the popular ones).
    while (bestI > alo && bestJ > blo && a[bestI - 1] === b[bestJ - 1]) {
      bestI--;
      bestJ--;
      best++;
    }
    while (bestI + best < ahi && bestJ + best < bhi && a[bestI + best] === b[bestJ + best]) best++;
    return [bestI, bestJ, best];
  }
}

/** One-off convenience: `SequenceMatcher(None, a, b).ratio()`. */
export function sequenceRatio(a: string, b: string): number {
  return new SequenceRatio(b).ratio(a);
}

const SURROGATE = /[\uD800-\uDFFF]/;

function codePoints(s: string): Int32Array {
  if (!SURROGATE.test(s)) {
    const out = new Int32Array(s.length);
    for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
    return out;
  }
  return Int32Array.from(Array.from(s, (c) => c.codePointAt(0) as number));
}
