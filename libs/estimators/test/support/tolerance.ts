/** The conformance tolerance of docs/estimators.md §1.7: |got − want| ≤ tol·(1 + |want|). */
export function expectClose(
  got: ArrayLike<number>,
  want: ArrayLike<number>,
  tol: number,
  label: string,
): void {
  if (got.length !== want.length) {
    throw new Error(`${label}: length ${got.length}, expected ${want.length}`);
  }
  for (let k = 0; k < want.length; k++) {
    const g = got[k] as number;
    const w = want[k] as number;
    if (!(Math.abs(g - w) <= tol * (1 + Math.abs(w)))) {
      throw new Error(`${label}[${k}]: got ${g}, expected ${w} (tolerance ${tol}·(1+|want|))`);
    }
  }
}
