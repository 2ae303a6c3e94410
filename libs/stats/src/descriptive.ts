/** Descriptive statistics (pure functions over plain or typed arrays). */

export function mean(x: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i] as number;
  return x.length ? s / x.length : NaN;
}

/** Population standard deviation (the spread of these advantages, not an estimate of another population's). */
export function std(x: ArrayLike<number>): number {
  const m = mean(x);
  let s = 0;
  for (let i = 0; i < x.length; i++) s += ((x[i] as number) - m) ** 2;
  return x.length ? Math.sqrt(s / x.length) : NaN;
}

/** Quantile q of sorted values by linear interpolation between closest ranks (numpy's default). */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return (sorted[lo] as number) + ((sorted[hi] as number) - (sorted[lo] as number)) * (pos - lo);
}

export function pearson(a: ArrayLike<number>, b: ArrayLike<number>): number | null {
  const ma = mean(a);
  const mb = mean(b);
  let sab = 0;
  let saa = 0;
  let sbb = 0;
  for (let i = 0; i < a.length; i++) {
    const da = (a[i] as number) - ma;
    const db = (b[i] as number) - mb;
    sab += da * db;
    saa += da * da;
    sbb += db * db;
  }
  return saa === 0 || sbb === 0 ? null : sab / Math.sqrt(saa * sbb);
}

const INDEX_BITS = 2 ** 21;

/**
 * Ranks 1..n, ties sharing their average rank. Each value's float32 bits are
 * mapped to an order-preserving integer and packed with its index into one
 * float64 (exact below 2^53), so a single native typed-array sort orders
 * values and remembers where they came from: no comparator callbacks, which
 * matters at 100k steps. Larger inputs fall back to binary search.
 */
export function ranks(x: ArrayLike<number>): Float64Array {
  const n = x.length;
  if (n >= INDEX_BITS) return ranksBySearch(x);
  const bits = new Uint32Array(new Float32Array(1).buffer);
  const f = new Float32Array(bits.buffer);
  const packed = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    f[0] = (x[i] as number) === 0 ? 0 : (x[i] as number); // -0 ties with +0
    const b = bits[0] as number;
    const key = b & 0x80000000 ? ~b >>> 0 : (b | 0x80000000) >>> 0;
    packed[i] = key * INDEX_BITS + i;
  }
  packed.sort();
  const r = new Float64Array(n);
  for (let i = 0; i < n;) {
    const key = Math.floor((packed[i] as number) / INDEX_BITS);
    let j = i;
    while (j + 1 < n && Math.floor((packed[j + 1] as number) / INDEX_BITS) === key) j++;
    const avg = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) r[(packed[k] as number) % INDEX_BITS] = avg;
    i = j + 1;
  }
  return r;
}

function ranksBySearch(x: ArrayLike<number>): Float64Array {
  const sorted = Float64Array.from(x).sort();
  const r = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) {
    const v = x[i] as number;
    r[i] = (bound(sorted, v, false) + bound(sorted, v, true) - 1) / 2 + 1;
  }
  return r;
}

/** First index whose value is ≥ v (or > v when `strict`). */
function bound(sorted: Float64Array, v: number, strict: boolean): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const m = sorted[mid] as number;
    if (m < v || (strict && m === v)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Indices of the k largest scores, largest first (ties: lower index first); O(n·k), for small k. */
export function topK(n: number, k: number, score: (i: number) => number): number[] {
  const best: number[] = [];
  const scores: number[] = [];
  for (let i = 0; i < n && k > 0; i++) {
    const s = score(i);
    if (best.length === k && s <= (scores[k - 1] as number)) continue;
    let at = best.length;
    while (at > 0 && (scores[at - 1] as number) < s) at--;
    best.splice(at, 0, i);
    scores.splice(at, 0, s);
    if (best.length > k) {
      best.pop();
      scores.pop();
    }
  }
  return best;
}

export function spearman(a: ArrayLike<number>, b: ArrayLike<number>): number | null {
  return pearson(ranks(a), ranks(b));
}
