import { useQuery } from '@tanstack/react-query';
import { Link, useParams, useSearchParams } from 'react-router';
import { fetchComparison } from '../api/compare-api';
import { fetchRun } from '../api/run-api';
import type { MethodInput, RunDetail } from '../api/types';
import { useCaps } from '../app/use-caps';
import { methodsParam, parseMethods } from '../components/format';
import { Failure, Loading } from '../components/Status';
import { CompareForm } from './compare/CompareForm';
import { CompareResults } from './compare/CompareResults';

/** Methods compared when the URL names none: the run's own and two common baselines. */
function defaultMethods(run: RunDetail): MethodInput[] {
  return [...new Set([run.method, 'grpo', 'gigpo', 'gaca'])].slice(0, 3).map((name) => ({ name }));
}

/** Iterations when the URL names none: the last one with rollouts (all of a long run is slow to read). */
function defaultIterations(run: RunDetail): number[] | null {
  const last = run.iterations.filter((i) => i.stepCount > 0).at(-1);
  return last ? [last.index] : null;
}

export function parseIterations(text: string | null): number[] | null | undefined {
  if (text === null) return undefined;
  if (text === 'all') return null;
  const its = text
    .split(',')
    .map((s) => Number(s.trim()))
    .filter((n) => Number.isInteger(n) && n >= 0);
  return its.length ? its : undefined;
}

/** Several estimators on the same stored rollouts: form in the URL, results below. */
export function ComparePage() {
  const { runId = '' } = useParams();
  const caps = useCaps();
  const [params, setParams] = useSearchParams();
  const run = useQuery({
    queryKey: ['run', runId],
    queryFn: () => fetchRun(caps!, runId),
    enabled: !!caps,
  });
  const r = run.data;
  const methods = parseMethods(params.get('m'));
  const chosen = r ? (methods.length ? methods : defaultMethods(r)) : [];
  const parsed = parseIterations(params.get('it'));
  const iterations = r ? (parsed === undefined ? defaultIterations(r) : parsed) : null;
  const comparison = useQuery({
    queryKey: ['compare', runId, JSON.stringify(chosen), iterations?.join(',') ?? 'all'],
    queryFn: () => fetchComparison(caps!, runId, chosen, iterations),
    enabled: !!caps && !!r && chosen.length > 0,
    staleTime: 60_000,
  });
  if (run.isPending) return <Loading what="the run" />;
  if (run.isError) return <Failure error={run.error} />;
  if (!r) return <Failure error={`no run ${runId}`} />;
  const submit = (m: MethodInput[], its: string) =>
    setParams({ m: methodsParam(m), it: its || 'all' });
  return (
    <section className="compare">
      <h1>
        Compare estimators on <Link to={`/runs/${r.id}`}>{r.name}</Link>
      </h1>
      <p className="muted">
        Every method recomputed on the run's identical stored rollouts: differences are the
        estimators', not the sampling's.
      </p>
      <CompareForm
        key={JSON.stringify(chosen) + String(iterations)}
        methods={chosen}
        iterations={iterations === null ? 'all' : iterations.join(',')}
        onSubmit={submit}
      />
      {comparison.isPending && <Loading what={`the comparison of ${chosen.length} methods`} />}
      {comparison.isError && <Failure error={comparison.error} />}
      {comparison.data && <CompareResults run={r} methods={chosen} comparison={comparison.data} />}
    </section>
  );
}
