/** Descriptive statistics for comparing estimators (pure functions over plain arrays). */

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

/** Ranks 1..n, ties sharing their average rank. */
export function ranks(x: ArrayLike<number>): Float64Array {
  const order = Array.from({ length: x.length }, (_, i) => i).sort(
    (i, j) => (x[i] as number) - (x[j] as number),
  );
  const r = new Float64Array(x.length);
  for (let i = 0; i < order.length;) {
    let j = i;
    while (j + 1 < order.length && x[order[j + 1] as number] === x[order[i] as number]) j++;
    const avg = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) r[order[k] as number] = avg;
    i = j + 1;
  }
  return r;
}

export function spearman(a: ArrayLike<number>, b: ArrayLike<number>): number | null {
  return pearson(ranks(a), ranks(b));
}

/** Fraction of steps where both advantages have the same sign (0 counts as its own sign). */
export function signAgreement(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let same = 0;
  for (let i = 0; i < a.length; i++)
    if (Math.sign(a[i] as number) === Math.sign(b[i] as number)) same++;
  return a.length ? same / a.length : NaN;
}
