import type { Capabilities } from './capabilities';
import { gql } from './graphql';
import type { Json, MethodInput } from './types';

export interface Histogram {
  edges: number[];
  counts: number[];
}

export interface MethodComparison {
  method: string;
  params: Record<string, Json>;
  advantageSetId: string | null;
  summary: Record<
    | 'mean'
    | 'std'
    | 'min'
    | 'max'
    | 'p05'
    | 'p25'
    | 'p50'
    | 'p75'
    | 'p95'
    | 'fractionPositive'
    | 'fractionZero',
    number
  >;
  rates: Record<string, Json>;
  histogram: Histogram;
}

export interface StepAdvantages {
  iteration: number;
  groupId: string;
  trajectoryId: string;
  stepIndex: number;
  state: string;
  action: string;
  reward: number;
  advantages: number[];
}

export interface Density {
  xEdges: number[];
  yEdges: number[];
  counts: number[];
  total: number;
}

export interface MethodPair {
  a: string;
  b: string;
  /** The sides' positions in `methods` (a method may be compared under several parameter sets). */
  aIndex: number;
  bIndex: number;
  pearson: number | null;
  spearman: number | null;
  /** Mean over task groups of the within-group Pearson correlation. */
  groupPearson?: number | null;
  /** Over the steps where both are nonzero; null when there are none. */
  signAgreement: number | null;
  disagreements: StepAdvantages[];
  density: Density;
}

export interface AgainstReference {
  method: string;
  /** Its position in `methods`. */
  methodIndex: number;
  field: string;
  steps: number;
  pearson: number | null;
  spearman: number | null;
  groupPearson?: number | null;
  signAgreement: number | null;
  /** Fraction of the steps where the reference is exactly 0. */
  zeroFractionB?: number;
}

export interface Comparison {
  runId: string;
  iterations: number[];
  stepCount: number;
  methods: MethodComparison[];
  pairs: MethodPair[];
  againstReference: AgainstReference[];
  /** Whether the bins came from the server (else from the rows, in the browser: older servers). */
  serverBinned: boolean;
}

/**
 * Which of the compared methods a side names, for servers older than the sides' positions (`aIndex`):
 * they name a side by its method, or, when one method is compared under several parameter sets, by the
 * method and its place in the list (`gigpo#3`); −1 for neither.
 */
export function methodIndexOf(label: string, methods: { method: string }[]): number {
  const numbered = /^(.+)#(\d+)$/.exec(label);
  if (numbered && methods[Number(numbered[2])]?.method === numbered[1]) return Number(numbered[2]);
  return methods.findIndex((m) => m.method === label);
}

type Positioned<T, K extends keyof T> = Omit<T, K> & Partial<Pick<T, K>>;
type ComparisonAnswer = Omit<Comparison, 'serverBinned' | 'pairs' | 'againstReference'> & {
  pairs: Positioned<MethodPair, 'aIndex' | 'bIndex'>[];
  againstReference: Positioned<AgainstReference, 'methodIndex'>[];
};

/** Every side with its position: the server's, or read from its name (older servers). */
export function withPositions(compare: ComparisonAnswer): Omit<Comparison, 'serverBinned'> {
  const indexOf = (label: string) => methodIndexOf(label, compare.methods);
  return {
    ...compare,
    pairs: compare.pairs.map((p) => ({
      ...p,
      aIndex: p.aIndex ?? indexOf(p.a),
      bIndex: p.bIndex ?? indexOf(p.b),
    })),
    againstReference: compare.againstReference.map((r) => ({
      ...r,
      methodIndex: r.methodIndex ?? indexOf(r.method),
    })),
  };
}

const STEP = 'iteration groupId trajectoryId stepIndex state action reward advantages';
const SUMMARY = 'mean std min max p05 p25 p50 p75 p95 fractionPositive fractionZero';
/** Older servers: bins computed here from at most this many rows. */
const MAX_BROWSER_BINNED_STEPS = 50_000;

export async function fetchComparison(
  caps: Capabilities,
  runId: string,
  methods: MethodInput[],
  iterations: number[] | null,
): Promise<Comparison> {
  const binned =
    caps.has('MethodComparison.histogram') || caps.has('MethodComparisonModel.histogram');
  // Older servers (one release behind) have no within-group figures, nor the sides' positions.
  const grouped = caps.has('MethodPair.groupPearson');
  const positioned = caps.has('MethodPair.aIndex');
  const query = `query Compare($runId: ID!, $methods: [MethodInput!]!, $iterations: [Int!]) {
    compare(runId: $runId, methods: $methods, iterations: $iterations, disagreements: 10) {
      runId iterations stepCount
      methods { method params advantageSetId summary { ${SUMMARY} } rates ${binned ? 'histogram(bins: 40) { edges counts }' : ''} }
      pairs { a b ${positioned ? 'aIndex bIndex' : ''} pearson spearman ${grouped ? 'groupPearson' : ''} signAgreement disagreements { ${STEP} } ${binned ? 'density(bins: 60) { xEdges yEdges counts total }' : ''} }
      againstReference { method ${positioned ? 'methodIndex' : ''} field steps pearson spearman signAgreement ${grouped ? 'groupPearson zeroFractionB' : ''} }
    }
  }`;
  const answer = await gql<{ compare: ComparisonAnswer }>(query, { runId, methods, iterations });
  const compare = withPositions(answer.compare);
  if (binned) return { ...compare, serverBinned: true };
  if (compare.stepCount > MAX_BROWSER_BINNED_STEPS)
    throw new Error(
      `this server does not bin comparisons (an older release) and ${compare.stepCount} steps are too many to bin in the browser`,
    );
  const rows = await fetchAllRows(caps, runId, methods, iterations);
  return { ...binInBrowser(compare, rows), serverBinned: false };
}

async function fetchAllRows(
  caps: Capabilities,
  runId: string,
  methods: MethodInput[],
  iterations: number[] | null,
): Promise<number[][]> {
  const paged = caps.has('StepAdvantagesConnection.pageInfo');
  const query = `query Rows($runId: ID!, $methods: [MethodInput!]!, $iterations: [Int!], $after: String) {
    compare(runId: $runId, methods: $methods, iterations: $iterations, disagreements: 0, examples: 0) {
      rows(first: 1000, after: $after) { nodes { advantages } ${paged ? 'pageInfo { endCursor hasNextPage }' : 'endCursor hasNextPage'} }
    }
  }`;
  const out: number[][] = [];
  let after: string | null = null;
  for (;;) {
    type Rows = {
      nodes: { advantages: number[] }[];
      pageInfo?: { endCursor: string | null; hasNextPage: boolean };
      endCursor?: string | null;
      hasNextPage?: boolean;
    };
    const rows: Rows = (
      await gql<{ compare: { rows: Rows } }>(query, { runId, methods, iterations, after })
    ).compare.rows;
    for (const n of rows.nodes) out.push(n.advantages);
    const info = rows.pageInfo ?? {
      endCursor: rows.endCursor ?? null,
      hasNextPage: rows.hasNextPage ?? false,
    };
    if (!info.hasNextPage) return out;
    after = info.endCursor;
  }
}

function edgesOf(values: number[], bins: number): number[] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
  }
  if (!Number.isFinite(lo)) return [0, 1];
  if (lo === hi) [lo, hi] = [lo - 0.5, hi + 0.5];
  return Array.from({ length: bins + 1 }, (_, i) => lo + ((hi - lo) * i) / bins);
}

const binOf = (edges: number[], v: number) =>
  Math.min(
    edges.length - 2,
    Math.max(0, Math.floor(((v - edges[0]!) / (edges.at(-1)! - edges[0]!)) * (edges.length - 1))),
  );

function binInBrowser(
  compare: Omit<Comparison, 'serverBinned'>,
  rows: number[][],
): Omit<Comparison, 'serverBinned'> {
  const column = (i: number) => rows.map((r) => r[i] ?? 0);
  const methods = compare.methods.map((m, i) => {
    const values = column(i);
    const edges = edgesOf(values, 40);
    const counts = new Array<number>(40).fill(0);
    for (const v of values) counts[binOf(edges, v)]! += 1;
    return { ...m, histogram: { edges, counts } };
  });
  const pairs = compare.pairs.map((p) => {
    const [xs, ys] = [column(p.aIndex), column(p.bIndex)];
    const [xEdges, yEdges] = [edgesOf(xs, 60), edgesOf(ys, 60)];
    const counts = new Array<number>(60 * 60).fill(0);
    xs.forEach((x, k) => (counts[binOf(yEdges, ys[k]!) * 60 + binOf(xEdges, x)]! += 1));
    return { ...p, density: { xEdges, yEdges, counts, total: xs.length } };
  });
  return { ...compare, methods, pairs };
}
