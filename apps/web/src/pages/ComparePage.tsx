import { useQuery } from '@tanstack/react-query';
import { Link, useParams, useSearchParams } from 'react-router';
import { fetchComparison } from '../api/compare-api';
import { fetchRun } from '../api/run-api';
import { fetchEstimators } from '../api/estimators-api';
import type { Estimator, MethodInput, RunDetail } from '../api/types';
import { useCaps } from '../app/use-caps';
import { methodsParam, parseMethods } from '../components/format';
import { parseIterations } from '../components/iterations-text';
import { ownMethod } from '../components/own-method';
import { Failure, Loading } from '../components/Status';
import { CompareForm } from './compare/CompareForm';
import { CompareResults } from './compare/CompareResults';

/**
 * Methods compared when the URL names none: the run's own, with the parameters it trained with, and
 * two common baselines.
 */
function defaultMethods(run: RunDetail, estimators: Estimator[] | undefined): MethodInput[] {
  const others = ['grpo', 'gigpo', 'gaca'].filter((name) => name !== run.method).slice(0, 2);
  return [ownMethod(run, estimators), ...others.map((name) => ({ name }))];
}

/** Iterations when the URL names none: the last one with rollouts (all of a long run is slow to read). */
function defaultIterations(run: RunDetail): number[] | null {
  const last = run.iterations.filter((i) => i.stepCount > 0).at(-1);
  return last ? [last.index] : null;
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
  const estimators = useQuery({ queryKey: ['estimators'], queryFn: fetchEstimators });
  const r = run.data;
  const methods = parseMethods(params.get('m'));
  // The address's methods, else the defaults once the registry says which run params are its method's.
  const chosen = methods.length
    ? methods
    : r && !estimators.isPending
      ? defaultMethods(r, estimators.data)
      : [];
  const parsed = parseIterations(params.get('it'));
  const iterations = r
    ? parsed.iterations === undefined
      ? defaultIterations(r)
      : parsed.iterations
    : null;
  // An address naming methods none of which could be read: said, rather than comparing others silently.
  const unreadMethods = !!params.get('m') && methods.length === 0;
  const comparison = useQuery({
    queryKey: ['compare', runId, JSON.stringify(chosen), iterations?.join(',') ?? 'all'],
    queryFn: () => fetchComparison(caps!, runId, chosen, iterations),
    enabled: !!caps && !!r && chosen.length > 0 && !parsed.error && !unreadMethods,
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
        iterations={
          parsed.error
            ? (params.get('it') ?? '')
            : iterations === null
              ? 'all'
              : iterations.join(',')
        }
        onSubmit={submit}
      />
      {parsed.error && <Failure error={parsed.error} />}
      {unreadMethods && (
        <Failure error="methods: the address's m is not a list of methods; choose them above" />
      )}
      {comparison.isPending && !parsed.error && !unreadMethods && (
        <Loading what={`the comparison of ${chosen.length} methods`} />
      )}
      {comparison.isError && <Failure error={comparison.error} />}
      {comparison.data && <CompareResults run={r} methods={chosen} comparison={comparison.data} />}
    </section>
  );
}
