import type { RolloutBatch, RolloutStep } from '../../src';

/**
 * Plain-loop reference implementations, transcribed from docs/estimators.md on the JSON
 * batch with string-keyed maps and per-record objects: slow and obvious, so the
 * optimised columnar versions can be checked against them on random batches.
 * They share no code with `src/` beyond the input type.
 */
interface Rec {
  group: number;
  traj: number;
  t: number;
  step: RolloutStep;
  g: number; // discounted reward-to-go
  R: number; // episode return of its trajectory
  T: number; // its trajectory's length
  outcome: string;
  next: string | null; // successor state text, null = terminal
}

export function records(batch: RolloutBatch, gamma: number): Rec[][] {
  return batch.groups.map((group, gi) =>
    group.trajectories.flatMap((traj, ti) => {
      const R = traj.steps.reduce((s, x) => s + x.reward, 0);
      const outcome = traj.outcome ?? (R > 0 ? 'success' : 'failure');
      const g: number[] = [];
      let acc = 0;
      for (let t = traj.steps.length - 1; t >= 0; t--)
        g[t] = acc = traj.steps[t]!.reward + gamma * acc;
      return traj.steps.map((step, t) => ({
        group: gi,
        traj: ti,
        t,
        step,
        g: g[t]!,
        R,
        T: traj.steps.length,
        outcome,
        next: t + 1 < traj.steps.length ? traj.steps[t + 1]!.state : null,
      }));
    }),
  );
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const std = (xs: number[]) => {
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1));
};

interface EpisodeOpts {
  normalize: string;
  episodeStats: string;
  epsilon: number;
}

/** GRPO's A^E for every record of one group (docs/estimators.md §1.9). */
export function episodeTerm(recs: Rec[], o: EpisodeOpts): number[] {
  const trajReturns = new Map<number, number>();
  for (const r of recs) trajReturns.set(r.traj, r.R);
  const X = o.episodeStats === 'steps' ? recs.map((r) => r.R) : [...trajReturns.values()];
  const [mu, sigma] = X.length === 1 ? [0, 1] : [mean(X), std(X)];
  return recs.map((r) =>
    o.normalize === 'mean-std' ? (r.R - mu) / (sigma + o.epsilon) : r.R - mu,
  );
}

/** Normalise each record's x within the records sharing its key; singletons get 0. */
function stepTerm(
  recs: Rec[],
  key: (r: Rec) => string,
  x: (r: Rec) => number,
  normalize: string,
  eps: number,
) {
  const members = new Map<string, number[]>();
  recs.forEach((r) => members.set(key(r), [...(members.get(key(r)) ?? []), x(r)]));
  return recs.map((r) => {
    const X = members.get(key(r))!;
    if (X.length === 1) return 0;
    return normalize === 'mean-std' ? (x(r) - mean(X)) / (std(X) + eps) : x(r) - mean(X);
  });
}

export function gigpoReference(batch: RolloutBatch, p: Record<string, any>): number[] {
  return records(batch, p.gamma).flatMap((recs) => {
    const AE = episodeTerm(recs, p as EpisodeOpts);
    const key =
      p.similarityThreshold === undefined
        ? (r: Rec) => r.step.state
        : similarityKey(recs, p.similarityThreshold);
    const AS = stepTerm(recs, key, (r) => r.g, p.normalize, p.epsilon);
    return recs.map((_, k) => AE[k]! + p.stepWeight * AS[k]!);
  });
}

/** Greedy first-match groups against un-updated representatives, record by record. */
function similarityKey(recs: Rec[], theta: number): (r: Rec) => string {
  const reps: string[] = [];
  const groupOf = new Map<Rec, string>();
  for (const r of recs) {
    let found = reps.findIndex((rep) => difflibRatio(r.step.state, rep) >= theta);
    if (found < 0) found = reps.push(r.step.state) - 1;
    groupOf.set(r, `group${found}`);
  }
  return (r) => groupOf.get(r)!;
}

export function gagpoReference(batch: RolloutBatch, p: Record<string, any>): number[] {
  return records(batch, p.gamma).flatMap((recs) => {
    const byState = new Map<string, number[]>();
    recs.forEach((r) => byState.set(r.step.state, [...(byState.get(r.step.state) ?? []), r.g]));
    const V = (s: string) => mean(byState.get(s)!);
    const delta = recs.map((r) => {
      let next = 0;
      if (r.next !== null) next = V(r.next);
      else if (
        p.bootstrapTruncated &&
        r.outcome === 'truncated' &&
        r.step.nextState &&
        byState.has(r.step.nextState)
      ) {
        next = V(r.step.nextState);
      }
      return r.step.reward + p.gamma * next - V(r.step.state);
    });
    const A = gae(recs, delta, p.gamma * p.lambda);
    if (p.normalize === 'none') return A;
    if (A.length === 1) return [0];
    const [m, s] = [mean(A), std(A)];
    return A.map((a) => (p.normalize === 'mean-std' ? (a - m) / (s + p.epsilon) : a - m));
  });
}

function gae(recs: Rec[], delta: number[], gl: number): number[] {
  const A = new Array<number>(recs.length);
  for (let k = recs.length - 1; k >= 0; k--) {
    const continues = recs[k]!.t + 1 < recs[k]!.T;
    A[k] = delta[k]! + (continues ? gl * A[k + 1]! : 0);
  }
  return A;
}

/** Gated-BEPO with per-edge synchronous sweeps over string-keyed nodes (docs/estimators.md §2.7). */
export function gatedBepoReference(
  batch: RolloutBatch,
  p: Record<string, any>,
): { A: number[]; V: number[] } {
  const out = { A: [] as number[], V: [] as number[] };
  for (const recs of records(batch, p.gamma)) {
    const succ = (r: Rec) => r.next ?? `⊥${r.outcome}`;
    const states = [...new Set(recs.map((r) => r.step.state))];
    let V = new Map<string, number>(
      states.map((s) => [s, mean(recs.filter((r) => r.step.state === s).map((r) => r.g))]),
    );
    const val = (n: string) => V.get(n) ?? 0;
    for (let it = 0; it < p.fixedPointMaxIter; it++) {
      const next = new Map<string, number>();
      for (const s of states) {
        const edges = recs.filter((r) => r.step.state === s);
        next.set(s, mean(edges.map((r) => r.step.reward + p.gamma * val(succ(r)))));
      }
      const change = Math.max(...states.map((s) => Math.abs(next.get(s)! - V.get(s)!)));
      V = next;
      if (change <= p.fixedPointTol) break;
    }
    const delta = recs.map((r) => r.step.reward + p.gamma * val(succ(r)) - val(r.step.state));
    const AFP = gae(recs, delta, p.gamma * p.lambda);
    const AE = episodeTerm(recs, p as EpisodeOpts);
    recs.forEach((r, k) => {
      const distinct = new Set(recs.filter((x) => x.step.state === r.step.state).map(succ)).size;
      const rho = distinct >= p.gateMinDistinctSuccessors ? 1 : 0;
      out.A.push((1 - rho * (1 - p.etaOn)) * AE[k]! + p.stepWeight * rho * AFP[k]!);
      out.V.push(val(r.step.state));
    });
  }
  return out;
}

export function bipaceReference(batch: RolloutBatch, p: Record<string, any>): number[] {
  return records(batch, p.gamma).flatMap((recs) => {
    const cluster = cosineClustersReference(
      recs.map((r) => r.step.embedding!),
      p.clusterEpsilon,
    );
    const AE = episodeTerm(recs, p as EpisodeOpts);
    return recs.map((r, k) => {
      const members = recs.filter((_, m) => cluster[m] === cluster[k]);
      let AS = 0;
      if (members.length > 1) {
        const V = mean(members.map((m) => m.g));
        const scale =
          p.normalize === 'mean-std' ? 1 / (std(members.map((m) => m.g)) + p.epsilon) : 1;
        const same = members.filter((m) => m.step.action === r.step.action).map((m) => m.g);
        const other = members.filter((m) => m.step.action !== r.step.action).map((m) => m.g);
        if (p.estimator === 'q_style') {
          const Q = (same.length * mean(same) + p.shrinkage * V) / (same.length + p.shrinkage);
          AS = (Q - V) * scale;
        } else {
          AS = (r.g - (other.length ? mean(other) : V)) * scale;
        }
      }
      return AE[k]! + p.stepWeight * AS;
    });
  });
}

export function cosineClustersReference(embeddings: number[][], eps: number): number[] {
  const unit = (v: number[]) => {
    const n = Math.hypot(...v);
    return n === 0 ? null : v.map((x) => x / n);
  };
  const clusters: { sum: number[]; open: boolean }[] = [];
  return embeddings.map((h) => {
    const phi = unit(Array.from(h, Math.fround)); // stored as float32, as the batch does
    let best = -1;
    let bestDist = Infinity;
    clusters.forEach((c, i) => {
      if (!phi || !c.open) return;
      const centre = unit(c.sum)!;
      const d = 1 - phi.reduce((a, x, j) => a + x * centre[j]!, 0);
      if (d < bestDist) [best, bestDist] = [i, d];
    });
    // the same rounding allowance as the library's (docs/estimators.md §1.4.4)
    if (phi && best >= 0 && bestDist <= eps + (2 * h.length + 4) * Number.EPSILON) {
      clusters[best]!.sum = clusters[best]!.sum.map((x, j) => x + phi[j]!);
      return best;
    }
    clusters.push({ sum: phi ?? h.map(() => 0), open: phi !== null });
    return clusters.length - 1;
  });
}

export function gacaReference(batch: RolloutBatch, p: Record<string, any>): number[] {
  return records(batch, p.gamma).flatMap((recs) => {
    const AE = episodeTerm(recs, p as EpisodeOpts);
    const rawAS = stepTerm(
      recs,
      (r) => r.step.state,
      (r) => r.g,
      p.normalize,
      p.epsilon,
    );
    const size = (r: Rec) => recs.filter((x) => x.step.state === r.step.state).length;
    const AS = recs.map((r, k) =>
      size(r) === 1 && p.singletonFallback === 'episode' ? AE[k]! : rawAS[k]!,
    );
    const H = (r: Rec): number | null => {
      if (r.step.nll !== undefined) return r.step.nll;
      const lp = r.step.tokenLogprobs!;
      return lp.length ? -mean(lp) : null;
    };
    const c = new Map<Rec, number>();
    for (const traj of new Set(recs.map((r) => r.traj))) {
      const steps = recs.filter((r) => r.traj === traj);
      const score = p.debiased ? looScores(recs, steps, H) : steps.map((r) => H(r));
      const defined = score.filter((x): x is number => x !== null);
      const mH = defined.length ? mean(defined) : 0;
      const deltas = steps.map((r, t) => (t === 0 ? 0 : Math.abs(r.g - steps[t - 1]!.g)));
      const mD = mean(deltas);
      const s = steps.map((_, t) => {
        if (score[t] === null && p.debiased) return null;
        const e = score[t] === null || mH <= 0 ? 1 : score[t]! / mH;
        return p.alphaC * e + (1 - p.alphaC) * (mD === 0 ? 1 : deltas[t]! / mD);
      });
      const counted = s.filter((x): x is number => x !== null);
      const mS = counted.length ? mean(counted) : 0;
      steps.forEach((r, t) => c.set(r, s[t] === null || mS <= 0 ? 1 : s[t]! / mS));
    }
    return recs.map((r, k) => {
      const ct = c.get(r)!;
      const l =
        ct >= 1
          ? Math.min(p.lambda0 * (1 + p.alphaLambda * (ct - 1)), 1)
          : Math.max(p.lambda0 * (1 - p.betaLambda * (1 - ct)), 0);
      return l * p.stepWeight * AS[k]! + (1 - l) * AE[k]!;
    });
  });
}

function looScores(recs: Rec[], steps: Rec[], H: (r: Rec) => number | null): (number | null)[] {
  return steps.map((r) => {
    const others = recs
      .filter((x) => x !== r && x.step.state === r.step.state)
      .map(H)
      .filter((x): x is number => x !== null);
    return others.length ? mean(others) : null;
  });
}

/** CPython difflib's SequenceMatcher(None, a, b).ratio(), transliterated with dicts. */
export function difflibRatio(aText: string, bText: string): number {
  const a = Array.from(aText);
  const b = Array.from(bText);
  const b2j = new Map<string, number[]>();
  b.forEach((c, j) => b2j.set(c, [...(b2j.get(c) ?? []), j]));
  if (b.length >= 200) {
    const ntest = Math.floor(b.length / 100) + 1;
    for (const [c, idx] of [...b2j]) if (idx.length > ntest) b2j.delete(c);
  }
  const longest = (
    alo: number,
    ahi: number,
    blo: number,
    bhi: number,
  ): [number, number, number] => {
    let [bi, bj, bs] = [alo, blo, 0];
    let j2len = new Map<number, number>();
    for (let i = alo; i < ahi; i++) {
      const newj2len = new Map<number, number>();
      for (const j of b2j.get(a[i]!) ?? []) {
        if (j < blo) continue;
        if (j >= bhi) break;
        const k = (j2len.get(j - 1) ?? 0) + 1;
        newj2len.set(j, k);
        if (k > bs) [bi, bj, bs] = [i - k + 1, j - k + 1, k];
      }
      j2len = newj2len;
    }
    while (bi > alo && bj > blo && a[bi - 1] === b[bj - 1]) [bi, bj, bs] = [bi - 1, bj - 1, bs + 1];
    while (bi + bs < ahi && bj + bs < bhi && a[bi + bs] === b[bj + bs]) bs++;
    return [bi, bj, bs];
  };
  let matches = 0;
  const queue: [number, number, number, number][] = [[0, a.length, 0, b.length]];
  while (queue.length) {
    const [alo, ahi, blo, bhi] = queue.pop()!;
    const [i, j, k] = longest(alo, ahi, blo, bhi);
    if (!k) continue;
    matches += k;
    if (alo < i && blo < j) queue.push([alo, i, blo, j]);
    if (i + k < ahi && j + k < bhi) queue.push([i + k, ahi, j + k, bhi]);
  }
  return a.length + b.length ? (2 * matches) / (a.length + b.length) : 1;
}
