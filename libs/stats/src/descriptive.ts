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

/**
 * Ranks 1..n, ties sharing their average rank, values compared as float32 (what advantages are
 * stored as; −0 ties with +0). The order comes from a radix sort of order-preserving integer keys:
 * linear in n, which matters at 100k steps, where a comparison sort of the values was most of a
 * `compare` call.
 */
export function ranks(x: ArrayLike<number>): Float64Array {
  const keys = float32Keys(x);
  return ranksFromOrder(keys, orderOfKeys(keys), null);
}

/**
 * The ranks of x pooled and within each of its groups (steps `offsets[g] .. offsets[g+1]-1`), and
 * its values in ascending order, from one sort. The sort is stable and groups are contiguous, so
 * among equal values each group's steps come together: the order of the whole run serves every
 * group. (The sorted values give a series' quantiles; sorting again for them was a sixth of a
 * `compare` call.)
 */
export function pooledAndGroupRanks(
  x: ArrayLike<number>,
  offsets: Int32Array,
): { ranks: Float64Array; groupRanks: Float64Array; sorted: Float32Array } {
  const groupOf = new Int32Array(x.length);
  for (let g = 0; g + 1 < offsets.length; g++)
    groupOf.fill(g, offsets[g] as number, offsets[g + 1] as number);
  const keys = float32Keys(x);
  const order = orderOfKeys(keys);
  const grouped = { groupOf, ranks: new Float64Array(x.length) };
  return {
    ranks: ranksFromOrder(keys, order, grouped),
    groupRanks: grouped.ranks,
    sorted: gather(x, order),
  };
}

/**
 * Pooled ranks from the keys' order, ties averaged; with `grouped`, also each step's rank within
 * its group (written into grouped.ranks): a tie run splits into its groups' stretches.
 */
function ranksFromOrder(
  keys: Uint32Array,
  order: Uint32Array,
  grouped: { groupOf: Int32Array; ranks: Float64Array } | null,
): Float64Array {
  const n = keys.length;
  const r = new Float64Array(n);
  const seen = grouped ? new Float64Array(n) : null; // steps of each group ranked so far
  for (let i = 0; i < n;) {
    const key = keys[order[i] as number] as number;
    let j = i;
    while (j + 1 < n && keys[order[j + 1] as number] === key) j++;
    const avg = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) r[order[k] as number] = avg;
    if (grouped && seen) {
      for (let k = i; k <= j;) {
        const g = grouped.groupOf[order[k] as number] as number;
        let e = k;
        while (e + 1 <= j && grouped.groupOf[order[e + 1] as number] === g) e++;
        const groupAvg = (seen[g] as number) + (e - k) / 2 + 1;
        for (let m = k; m <= e; m++) grouped.ranks[order[m] as number] = groupAvg;
        seen[g] = (seen[g] as number) + (e - k + 1);
        k = e + 1;
      }
    }
    i = j + 1;
  }
  return r;
}

/** x's values in ascending order, as float32 (−0 as +0). */
export function sortedFloat32(x: ArrayLike<number>): Float32Array {
  return gather(x, orderOfKeys(float32Keys(x)));
}

/** x's values in `order`, as float32 (−0 as +0). */
function gather(x: ArrayLike<number>, order: Uint32Array): Float32Array {
  const out = new Float32Array(order.length);
  for (let i = 0; i < out.length; i++) {
    const v = x[order[i] as number] as number;
    out[i] = v === 0 ? 0 : v;
  }
  return out;
}

/** Each value's float32 bits mapped to an unsigned integer in the same order as the values. */
function float32Keys(x: ArrayLike<number>): Uint32Array {
  const n = x.length;
  const f = new Float32Array(n);
  for (let i = 0; i < n; i++) f[i] = (x[i] as number) === 0 ? 0 : (x[i] as number);
  const keys = new Uint32Array(f.buffer);
  for (let i = 0; i < n; i++) {
    const b = keys[i] as number;
    keys[i] = b & 0x80000000 ? ~b >>> 0 : (b | 0x80000000) >>> 0;
  }
  return keys;
}

/** Below this many values a native sort of packed (key, index) pairs beats a radix sort's four passes. */
const RADIX_FROM = 1024;

/**
 * Indices 0..n−1 in ascending order of their keys (stable): a least-significant-digit radix sort, 8
 * bits a pass; for few keys, one native sort of key·2^10 + index packed into float64s (exact).
 */
function orderOfKeys(keys: Uint32Array): Uint32Array {
  const n = keys.length;
  if (n < RADIX_FROM) {
    const packed = new Float64Array(n);
    for (let i = 0; i < n; i++) packed[i] = (keys[i] as number) * RADIX_FROM + i;
    packed.sort();
    const order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[i] = (packed[i] as number) % RADIX_FROM;
    return order;
  }
  let order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  let next = new Uint32Array(n);
  const count = new Uint32Array(256);
  for (let shift = 0; shift < 32; shift += 8) {
    count.fill(0);
    for (let i = 0; i < n; i++) {
      const d = ((keys[i] as number) >>> shift) & 0xff;
      count[d] = (count[d] as number) + 1;
    }
    let sum = 0;
    for (let d = 0; d < 256; d++) {
      const c = count[d] as number;
      count[d] = sum;
      sum += c;
    }
    for (let i = 0; i < n; i++) {
      const o = order[i] as number;
      const d = ((keys[o] as number) >>> shift) & 0xff;
      const at = count[d] as number;
      next[at] = o;
      count[d] = at + 1;
    }
    [order, next] = [next, order];
  }
  return order;
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
