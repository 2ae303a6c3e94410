import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';
import { Link, useParams } from 'react-router';
import { watchRun } from '../api/live';
import { fetchRun } from '../api/run-api';
import { isStatus } from '../api/types';
import { useCaps } from '../app/use-caps';
import { when } from '../components/format';
import { MethodName } from '../components/MethodName';
import { Failure, Loading, StatusPill } from '../components/Status';
import { Checkpoints } from './run/Checkpoints';
import { EventLog } from './run/EventLog';
import { IterationsTable } from './run/IterationsTable';
import { JobsPanel } from './run/JobsPanel';
import { LearningCurves } from './run/LearningCurves';
import { Lineage } from './run/Lineage';

/** One run: what it is, where it came from, how it learned, what was logged and recomputed. */
export function RunPage() {
  const { runId = '' } = useParams();
  const caps = useCaps();
  const queries = useQueryClient();
  const run = useQuery({
    queryKey: ['run', runId],
    queryFn: () => fetchRun(caps!, runId),
    enabled: !!caps,
  });
  // Live while the run is running: every append (and job progress) refreshes what this page shows,
  // through the runProgress subscription where the server has it, else by polling.
  const running = run.data ? isStatus(run.data.status, 'running') : false;
  useEffect(() => {
    if (!caps || !running) return;
    return watchRun(
      caps,
      runId,
      () => void queries.invalidateQueries({ predicate: (q) => q.queryKey.includes(runId) }),
    );
  }, [caps, runId, queries, running]);
  if (run.isPending) return <Loading what="the run" />;
  if (run.isError) return <Failure error={run.error} />;
  const r = run.data;
  if (!r) return <Failure error={`no run ${runId} (or not in this key's project)`} />;
  return (
    <section className="run">
      <div className="title-row">
        <h1>{r.name}</h1>
        <StatusPill status={r.status} />
        <Link className="button" to={`/runs/${r.id}/compare`}>
          Compare estimators
        </Link>
      </div>
      <dl className="facts">
        <dt>Method</dt>
        <dd>
          <MethodName name={r.method} />
        </dd>
        <dt>Environment</dt>
        <dd>{r.env}</dd>
        <dt>Project</dt>
        <dd>{r.project}</dd>
        <dt>Seed</dt>
        <dd>{r.seed ?? '–'}</dd>
        <dt>Created</dt>
        <dd>{when(r.createdAt)}</dd>
        <dt>Finished</dt>
        <dd>{when(r.finishedAt)}</dd>
        <dt>Id</dt>
        <dd>
          <code>{r.id}</code>
        </dd>
        <dt>Tags</dt>
        <dd>
          {r.tags.map((t) => (
            <span key={t} className="tag">
              {t}
            </span>
          ))}
        </dd>
      </dl>
      <Lineage run={r} />
      <details>
        <summary>Config and parameters</summary>
        <div className="two-col">
          <div>
            <h3>Params</h3>
            {isEmptyObject(r.params) ? (
              <p className="muted" data-testid="run-params">
                none given: the method's defaults (see Estimators)
              </p>
            ) : (
              <pre data-testid="run-params">{JSON.stringify(r.params, null, 2)}</pre>
            )}
          </div>
          <div>
            <h3>Config</h3>
            {isEmptyObject(r.config) ? (
              <p className="muted" data-testid="run-config">
                none given
              </p>
            ) : (
              <pre data-testid="run-config">{JSON.stringify(r.config, null, 2)}</pre>
            )}
          </div>
        </div>
      </details>
      <LearningCurves run={r} />
      <IterationsTable run={r} />
      <JobsPanel run={r} />
      <Checkpoints run={r} />
      <EventLog runId={r.id} />
    </section>
  );
}

/** `{}`, `null` or nothing: what a run without params or config holds. */
function isEmptyObject(value: unknown): boolean {
  return (
    value === null ||
    value === undefined ||
    (typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length === 0)
  );
}
