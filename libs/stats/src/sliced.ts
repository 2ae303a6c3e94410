/**
 * Pearson correlation and sign agreement of a and b within each slice of the steps (`sliceOf[k]`
 * in 0..slices−1; a slice need not be contiguous), in two passes over the steps rather than one
 * copy of each slice. Each slice's sums run over its steps in ascending order, as `pearson` and
 * `signAgreement` would on the slice copied out, so the results are the same to the last bit.
 */
export function slicedAgreement(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  sliceOf: Int32Array,
  slices: number,
): { steps: number; pearson: number | null; signAgreement: number | null }[] {
  const n = new Float64Array(slices);
  const sa = new Float64Array(slices);
  const sb = new Float64Array(slices);
  const both = new Float64Array(slices);
  const same = new Float64Array(slices);
  for (let k = 0; k < sliceOf.length; k++) {
    const s = sliceOf[k] as number;
    const x = a[k] as number;
    const y = b[k] as number;
    n[s] = (n[s] as number) + 1;
    sa[s] = (sa[s] as number) + x;
    sb[s] = (sb[s] as number) + y;
    if (x !== 0 && y !== 0) {
      both[s] = (both[s] as number) + 1;
      if (x > 0 === y > 0) same[s] = (same[s] as number) + 1;
    }
  }
  const ma = sa.map((sum, s) => sum / (n[s] as number));
  const mb = sb.map((sum, s) => sum / (n[s] as number));
  const sab = new Float64Array(slices);
  const saa = new Float64Array(slices);
  const sbb = new Float64Array(slices);
  for (let k = 0; k < sliceOf.length; k++) {
    const s = sliceOf[k] as number;
    const da = (a[k] as number) - (ma[s] as number);
    const db = (b[k] as number) - (mb[s] as number);
    sab[s] = (sab[s] as number) + da * db;
    saa[s] = (saa[s] as number) + da * da;
    sbb[s] = (sbb[s] as number) + db * db;
  }
  return Array.from({ length: slices }, (_, s) => ({
    steps: n[s] as number,
    pearson:
      saa[s] === 0 || sbb[s] === 0
        ? null
        : (sab[s] as number) / Math.sqrt((saa[s] as number) * (sbb[s] as number)),
    signAgreement: both[s] ? (same[s] as number) / (both[s] as number) : null,
  }));
}
