/** How often two per-step values point the same way, and how often either says nothing. */
export interface SignAgreement {
  steps: number;
  /** Steps where both values are nonzero: the only steps whose signs can agree or disagree. */
  bothNonzero: number;
  /** Fraction of `bothNonzero` steps with the same sign; null when there are none. */
  agreement: number | null;
  /** Fraction of all steps where the first (second) value is exactly 0. */
  zeroFractionA: number;
  zeroFractionB: number;
}

/**
 * Sign agreement over the steps where both values are nonzero, with each side's fraction of zeros
 * beside it. A zero carries no sign: counting 0 = 0 as agreement, or 0 against a nonzero value as
 * disagreement, would score a method by how often it abstains (GRPO's all-failed groups are zero
 * everywhere) rather than by whether it points the right way when it does not.
 */
export function signAgreement(a: ArrayLike<number>, b: ArrayLike<number>): SignAgreement {
  let both = 0;
  let same = 0;
  let zeroA = 0;
  let zeroB = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    if (x === 0) zeroA++;
    if (y === 0) zeroB++;
    if (x !== 0 && y !== 0) {
      both++;
      if (x > 0 === y > 0) same++;
    }
  }
  const n = a.length;
  return {
    steps: n,
    bothNonzero: both,
    agreement: both ? same / both : null,
    zeroFractionA: n ? zeroA / n : NaN,
    zeroFractionB: n ? zeroB / n : NaN,
  };
}
