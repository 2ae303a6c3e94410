import {
  AGREEMENT_SCORES,
  groupOffsets,
  referenceAgreementIntervals,
  signAgreement,
  type AgreementIntervals,
  type Interval,
} from '@creditlab/stats';

/**
 * The group bootstrap of the truth table: `compare { intervals }`'s defaults (1000 resamples of the
 * task groups, 95 %, seed 1), so the in-process figures and the server's are drawn alike.
 */
export const TRUTH_BOOTSTRAP = { resamples: 1000, level: 0.95, seed: 1 } as const;

/** One method against the exact advantages of the truth run, every score with its interval. */
export interface TruthRow extends AgreementIntervals {
  method: string;
  steps: number;
  /** Task groups (one task's rollouts in one iteration): the unit the bootstrap resamples. */
  groups: number;
  /** Steps where both the method's advantage and the truth are nonzero (sign agreement's steps). */
  bothNonzero: number;
  /** Fraction of steps where the method's advantage is exactly 0, and where the truth is. */
  zeroFraction: number;
  truthZeroFraction: number;
  /** Within-group Pearson minus GRPO's on the same resamples; null for GRPO or without GRPO. */
  groupPearsonMinusGrpo: Interval | null;
}

/** Every method against the truth, steps in task groups (`groupOf` never goes back). */
export function truthRows(
  methods: { method: string; advantages: ArrayLike<number> }[],
  truth: ArrayLike<number>,
  groupOf: ArrayLike<number>,
): TruthRow[] {
  const offsets = groupOffsets(groupOf);
  const grpo = methods.findIndex((m) => m.method === 'grpo');
  const others = methods.map((_, i) => i).filter((i) => i !== grpo);
  const r = referenceAgreementIntervals(
    methods.map((m) => m.advantages),
    truth,
    offsets,
    grpo < 0 ? [] : others.map((i): [number, number] => [i, grpo]),
    TRUTH_BOOTSTRAP,
  );
  return methods.map((m, i) => {
    const sign = signAgreement(m.advantages, truth);
    const d = others.indexOf(i);
    return {
      method: m.method,
      steps: sign.steps,
      groups: offsets.length - 1,
      ...r.scores[i]!,
      bothNonzero: sign.bothNonzero,
      zeroFraction: sign.zeroFractionA,
      truthZeroFraction: sign.zeroFractionB,
      groupPearsonMinusGrpo: grpo < 0 || d < 0 ? null : r.differences[d]!.groupPearson,
    };
  });
}

const INTERVAL = '{ estimate low high }';

/** The `compare` query whose answer `truthRowsFromServer` reads. */
export const TRUTH_QUERY = `query($id: ID!, $m: [MethodInput!]!) { compare(runId: $id, methods: $m) {
  againstReference { method steps bothNonzero zeroFractionA zeroFractionB }
  intervals(resamples: ${TRUTH_BOOTSTRAP.resamples}, level: ${TRUTH_BOOTSTRAP.level}, seed: ${TRUTH_BOOTSTRAP.seed}) {
    groups
    againstReference { a ${AGREEMENT_SCORES.map((s) => `${s} ${INTERVAL}`).join(' ')} }
    referenceDifferences { a b groupPearson ${INTERVAL} } } } }`;

export interface TruthAnswer {
  compare: {
    againstReference: {
      method: string;
      steps: number;
      bothNonzero: number;
      zeroFractionA: number;
      zeroFractionB: number;
    }[];
    intervals: {
      groups: number;
      againstReference: (AgreementIntervals & { a: string })[];
      referenceDifferences: { a: string; b: string; groupPearson: Interval }[];
    };
  };
}

/** The rows from the server's answer: its differences are a − b for a listed before b, so some turn round. */
export function truthRowsFromServer(answer: TruthAnswer): TruthRow[] {
  const { againstReference, intervals } = answer.compare;
  return againstReference.map((m, i) => {
    const { a: _name, ...scores } = intervals.againstReference[i]!;
    const versus = (a: string, b: string) =>
      intervals.referenceDifferences.find((d) => d.a === a && d.b === b)?.groupPearson;
    const reversed = versus('grpo', m.method);
    return {
      method: m.method,
      steps: m.steps,
      groups: intervals.groups,
      ...scores,
      bothNonzero: m.bothNonzero,
      zeroFraction: m.zeroFractionA,
      truthZeroFraction: m.zeroFractionB,
      groupPearsonMinusGrpo:
        m.method === 'grpo'
          ? null
          : (versus(m.method, 'grpo') ?? (reversed ? negated(reversed) : null)),
    };
  });
}

const neg = (x: number | null) => (x === null ? null : -x);
const negated = (d: Interval): Interval => ({
  estimate: neg(d.estimate),
  low: neg(d.high),
  high: neg(d.low),
});
