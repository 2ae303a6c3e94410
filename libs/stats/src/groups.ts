import { pearson, pooledAndGroupRanks, spearman } from './descriptive';

/**
 * Steps come in contiguous groups (task groups: the rollouts of one task): group g holds steps
 * `offsets[g] .. offsets[g+1]-1`. Offsets from a per-step group index that never goes back.
 */
export function groupOffsets(groupOf: ArrayLike<number>): Int32Array {
  const offsets: number[] = [0];
  for (let k = 1; k < groupOf.length; k++) if (groupOf[k] !== groupOf[k - 1]) offsets.push(k);
  if (groupOf.length) offsets.push(groupOf.length);
  return Int32Array.from(offsets);
}

export type CorrelationKind = 'pearson' | 'spearman';

/** Each group's correlation between a and b; null where a group has fewer than 2 steps or a constant side. */
export function perGroupCorrelation(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  offsets: Int32Array,
  kind: CorrelationKind = 'pearson',
): (number | null)[] {
  const out: (number | null)[] = [];
  for (let g = 0; g + 1 < offsets.length; g++) {
    const from = offsets[g] as number;
    const to = offsets[g + 1] as number;
    if (to - from < 2) {
      out.push(null);
      continue;
    }
    const x = slice(a, from, to);
    const y = slice(b, from, to);
    out.push(kind === 'pearson' ? pearson(x, y) : spearman(x, y));
  }
  return out;
}

/**
 * Each group's ranks (1..size, ties averaged) in place of its values: what Spearman within groups
 * correlates. A comparison of several series ranks each once (with `pooledAndGroupRanks`), then
 * correlates the ranks of every pair with `meanGroupCorrelation(…, 'pearson')`, which equals
 * `'spearman'` on the values.
 */
export function groupRanks(x: ArrayLike<number>, offsets: Int32Array): Float64Array {
  return pooledAndGroupRanks(x, offsets).groupRanks;
}

/**
 * Within-task agreement: the mean over groups of each group's correlation, over the groups where it
 * is defined. Pooled correlation mixes in how tasks differ from each other (a method that only
 * separates easy from hard tasks scores well pooled); within a group the task is fixed.
 */
export function meanGroupCorrelation(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  offsets: Int32Array,
  kind: CorrelationKind = 'pearson',
): { mean: number | null; groups: number } {
  const rs = perGroupCorrelation(a, b, offsets, kind).filter((r): r is number => r !== null);
  return { mean: rs.length ? rs.reduce((s, r) => s + r, 0) / rs.length : null, groups: rs.length };
}

/** Steps from..to-1 of x: a view of a typed array (no copy), else a copy. */
function slice(x: ArrayLike<number>, from: number, to: number): ArrayLike<number> {
  if (x instanceof Float64Array || x instanceof Float32Array) return x.subarray(from, to);
  const out = new Float64Array(to - from);
  for (let i = from; i < to; i++) out[i - from] = x[i] as number;
  return out;
}
