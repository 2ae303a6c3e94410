import type { Interval } from '@creditlab/stats';
import type { QualityResult } from './quality-run';

/** The rows whose baseline is a group statistic: once success is above one half they should beat the plain return. */
export const GROUP_BASELINES = ['grpo', 'rloo', 'gigpo', 'gaca', 'gated-bepo', 'gagpo', 'bipace'];

export type Verdict = 'pass' | 'fail' | 'not established';

export interface SanityVerdict {
  groupSize: number;
  row: string;
  /** The row's gradient cosine minus the plain return's [95 % interval over resampled tasks]. */
  difference: Interval;
  verdict: Verdict;
}

/** pass: the interval lies above 0; fail: below; not established: it holds 0 (or there is none). */
export function verdictOf(difference: Interval): Verdict {
  if (difference.low === null || difference.high === null) return 'not established';
  if (difference.low > 0) return 'pass';
  if (difference.high < 0) return 'fail';
  return 'not established';
}

/**
 * The issue's sanity check, on the measure a group baseline can move: the policy-gradient cosine
 * (a baseline constant over a group is a shift, which leaves a within-group correlation unchanged,
 * but changes the gradient). Every group size of a snapshot whose training success is above one
 * half; none below.
 */
export function sanityVerdicts(snapshot: QualityResult['snapshots'][number]): SanityVerdict[] {
  if (snapshot.successRate <= 0.5) return [];
  return snapshot.bySize.flatMap((b) =>
    GROUP_BASELINES.map((name) => {
      const difference = b.rows.find((r) => r.row === name)!.gradientCosineVsPlain;
      return { groupSize: b.groupSize, row: name, difference, verdict: verdictOf(difference) };
    }),
  );
}

const f2 = (x: number | null) => (x === null ? '–' : x.toFixed(2));
const mark: Record<Verdict, string> = {
  pass: '**pass**',
  fail: '**fail**',
  'not established': 'n. e.',
};

/** The verdicts as a table (group size by row), with how to read it; '' below one half. */
export function sanityTable(snapshot: QualityResult['snapshots'][number]): string {
  const verdicts = sanityVerdicts(snapshot);
  if (!verdicts.length) return '';
  const sizes = snapshot.bySize.map((b) => b.groupSize);
  const cell = (G: number, name: string) => {
    const v = verdicts.find((x) => x.groupSize === G && x.row === name)!;
    const d = v.difference;
    return `${f2(d.estimate)} [${f2(d.low)}, ${f2(d.high)}] ${mark[v.verdict]}`;
  };
  const fails = verdicts.filter((v) => v.verdict === 'fail');
  return `
Sanity check (training success above one half, so a group baseline should beat the plain return), on the policy-gradient
cosine: each group-baseline row's cosine minus the plain return's [95 % CI over resampled tasks]; **pass** where the
interval lies above 0, **fail** where it lies below, n. e. (not established) where it holds 0.

| G | ${GROUP_BASELINES.join(' | ')} |
|---:|${GROUP_BASELINES.map(() => '---:').join('|')}|
${sizes.map((G) => `| ${G} | ${GROUP_BASELINES.map((n) => cell(G, n)).join(' | ')} |`).join('\n')}

Verdicts: ${count(verdicts, 'pass')} pass, ${count(verdicts, 'fail')} fail, ${count(verdicts, 'not established')} not established.${
    fails.length
      ? ` Fails (${fails.map((v) => `${v.row} at G = ${v.groupSize}`).join(', ')}): why is diagnosed by hand in the text above these tables.`
      : ''
  }
The within-group correlation cannot make this check: a baseline constant over the group is a shift and leaves a
within-group correlation unchanged.
`;
}

const count = (vs: SanityVerdict[], v: Verdict) => vs.filter((x) => x.verdict === v).length;
