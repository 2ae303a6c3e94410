import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { fetchEstimators } from '../../api/estimators-api';
import { watchRun } from '../../api/live';
import { cancelJob, fetchAdvantageSets, fetchJobs, startRecompute } from '../../api/run-api';
import { isStatus, type Job, type Json, type MethodInput, type RunDetail } from '../../api/types';
import { useCaps } from '../../app/use-caps';
import { canWrite, useViewer } from '../../app/viewer';
import { methodLabel, methodsParam, when } from '../../components/format';
import { MethodName } from '../../components/MethodName';
import { givenParams, ownMethod } from '../../components/own-method';
import { parseIterations } from '../../components/iterations-text';
import { ParamsForm } from '../../components/ParamsForm';
import { Failure } from '../../components/Status';

const active = (j: Job) => isStatus(j.status, 'queued') || isStatus(j.status, 'running');

/** Which iterations a recompute takes when none are named (the server's rule). */
const COMPLETE_ITERATION =
  'a recompute with no iterations named takes the complete ones, those with a later iteration or of a run that has ended; a running run has none until its second iteration';

/**
 * The compare page for a finished job's set beside the run's own method (with the run's parameters),
 * on the job's last iteration; the set alone when it is the run's own.
 */
function compareHref(
  run: RunDetail,
  computed: MethodInput,
  own: MethodInput,
  iterations: number[],
): string {
  const same = methodsParam([computed]) === methodsParam([own]);
  const methods = same ? [own] : [own, computed];
  const last = iterations.at(-1);
  return `/runs/${run.id}/compare?m=${encodeURIComponent(methodsParam(methods))}${last === undefined ? '' : `&it=${last}`}`;
}

/** Recompute jobs with live progress and cancel; write keys may start one for any method. */
export function JobsPanel({ run }: { run: RunDetail }) {
  const caps = useCaps();
  const viewer = useViewer();
  const queries = useQueryClient();
  const jobs = useQuery({
    queryKey: ['jobs', run.id],
    queryFn: () => fetchJobs(caps!, run.id),
    enabled: !!caps,
  });
  // Live progress while a job is queued or running (the subscription, else a poll every second).
  const anyActive = !!jobs.data?.some(active);
  useEffect(() => {
    if (!caps || !anyActive) return;
    return watchRun(
      caps,
      run.id,
      () => void queries.invalidateQueries({ queryKey: ['jobs', run.id] }),
      1000,
    );
  }, [caps, run.id, anyActive, queries]);
  const sets = useQuery({
    queryKey: ['sets', run.id, jobs.data?.length],
    queryFn: () => fetchAdvantageSets(run.id),
  });
  const estimators = useQuery({ queryKey: ['estimators'], queryFn: fetchEstimators });
  const own = ownMethod(run, estimators.data);
  // A set as the user would name it: the parameters that differ from the defaults.
  const methodOf = (j: Job): MethodInput | undefined => {
    const set = sets.data?.find((s) => s.id === j.advantageSetId);
    if (!set) return undefined;
    const params = givenParams(set.method, set.params, estimators.data) as Record<string, Json>;
    return Object.keys(params).length ? { name: set.method, params } : { name: set.method };
  };
  const cancel = useMutation({
    mutationFn: cancelJob,
    onSettled: () => queries.invalidateQueries({ queryKey: ['jobs', run.id] }),
  });
  return (
    <div>
      <h2>Recompute jobs</h2>
      {canWrite(viewer) && (
        <RecomputeForm
          runId={run.id}
          runMethod={run.method}
          own={own}
          onStarted={() => void queries.invalidateQueries({ queryKey: ['jobs', run.id] })}
        />
      )}
      {jobs.isError && <Failure error={jobs.error} />}
      {jobs.data && !jobs.data.length && <p className="muted">No recompute jobs.</p>}
      {!!jobs.data?.length && (
        <table className="grid" data-testid="jobs-table">
          <thead>
            <tr>
              <th>Job</th>
              <th>Method</th>
              <th>Status</th>
              <th>Progress</th>
              <th>Started</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {jobs.data.map((j) => {
              const set = methodOf(j);
              return (
                <tr key={j.id} data-testid="job-row" data-status={j.status.toLowerCase()}>
                  <td>
                    <code>{j.id.slice(0, 8)}</code>
                  </td>
                  <td>{set ? <MethodName name={set.name} label={methodLabel(set)} /> : '…'}</td>
                  <td>
                    {j.status.toLowerCase()}
                    {j.error && <span className="error small"> {j.error}</span>}
                  </td>
                  <td>
                    {isStatus(j.status, 'completed') && j.total === 0 ? (
                      <span className="muted small" data-testid="job-empty">
                        nothing to compute: {COMPLETE_ITERATION}
                      </span>
                    ) : (
                      <>
                        <progress
                          max={Math.max(1, j.total)}
                          value={j.done}
                          aria-label={`job ${j.id} progress`}
                        />{' '}
                        {j.done}/{j.total} iterations
                      </>
                    )}
                  </td>
                  <td>{when(j.createdAt)}</td>
                  <td>
                    {set && isStatus(j.status, 'completed') && j.total > 0 && (
                      <Link
                        to={compareHref(run, set, own, j.iterations)}
                        data-testid="job-compare"
                        title="compare this set with the run's own method on the job's last iteration"
                      >
                        compare
                      </Link>
                    )}
                    {active(j) && canWrite(viewer) && (
                      <button
                        type="button"
                        onClick={() => cancel.mutate(j.id)}
                        disabled={cancel.isPending}
                      >
                        Cancel
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </div>
  );
}

function RecomputeForm({
  runId,
  runMethod,
  own,
  onStarted,
}: {
  runId: string;
  /** The run's own method, chosen first (another estimator is a choice away). */
  runMethod: string;
  /** The run's own method and parameters: the form starts from them. */
  own: MethodInput;
  onStarted(): void;
}) {
  const estimators = useQuery({ queryKey: ['estimators'], queryFn: fetchEstimators });
  const [picked, setMethod] = useState<string | null>(null);
  // The run's own method until another is picked, if the registry has it (a run's method is a label).
  const known = estimators.data?.some((e) => e.name === runMethod) ?? true;
  const method = picked ?? (known ? runMethod : 'gigpo');
  // null: untouched, so the run's own parameters while its own method is chosen
  const [touched, setParams] = useState<Record<string, Json> | null>(null);
  const params = touched ?? (method === own.name ? (own.params ?? {}) : {});
  const [iterations, setIterations] = useState('');
  // As the compare page reads them (0,2,5-9 or all); a bad entry is named here, not sent as null.
  const parsed = parseIterations(iterations);
  const start = useMutation({
    mutationFn: () => startRecompute(runId, { name: method, params }, parsed.iterations ?? null),
    onSuccess: onStarted,
  });
  const estimator = estimators.data?.find((e) => e.name === method);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!parsed.error) start.mutate();
  };
  return (
    <form className="recompute" onSubmit={submit} aria-label="Start a recompute">
      <label>
        Method
        <select
          value={method}
          onChange={(e) => (setMethod(e.target.value), setParams({}))}
          aria-label="Recompute method"
        >
          {estimators.data?.map((m) => (
            <option key={m.name}>{m.name}</option>
          ))}
        </select>
      </label>
      {estimator && (
        <ParamsForm
          estimator={estimator}
          value={params}
          onChange={setParams}
          idPrefix="recompute"
        />
      )}
      <label>
        Iterations
        <input
          value={iterations}
          onChange={(e) => setIterations(e.target.value)}
          placeholder="all complete"
          aria-label="Recompute iterations"
          title={`Iterations and ranges, e.g. 0,2,5-9. Empty: ${COMPLETE_ITERATION}.`}
        />
      </label>
      <button type="submit" disabled={start.isPending || !!parsed.error}>
        Start recompute
      </button>
      {parsed.error && <Failure error={parsed.error} />}
      {start.isError && <Failure error={start.error} />}
    </form>
  );
}
