import { Link } from 'react-router';
import type { RunDetail, RunRow } from '../../api/types';
import { MethodName } from '../../components/MethodName';

const isRetrain = (r: RunRow & { config?: unknown }) =>
  !!(r.config as { retrainOf?: unknown } | undefined)?.retrainOf;

/** Parent, forks and retrains, as links. */
export function Lineage({ run }: { run: RunDetail }) {
  const children = (run.children ?? []) as (RunRow & {
    config?: unknown;
    forkIteration?: number | null;
  })[];
  return (
    <div className="lineage" data-testid="lineage">
      <h2>Lineage</h2>
      <p>
        Parent:{' '}
        {run.parentRunId ? (
          <>
            <Link to={`/runs/${run.parentRunId}`}>{run.parent?.name ?? run.parentRunId}</Link>
            {run.parent && (
              <>
                {' '}
                <MethodName name={run.parent.method} />
              </>
            )}
            {run.forkIteration !== null && ` (from iteration ${run.forkIteration})`}
          </>
        ) : (
          'none'
        )}
      </p>
      {run.children === undefined ? (
        <p className="muted small">This server does not list a run's forks and retrains.</p>
      ) : children.length === 0 ? (
        <p>No forks or retrains.</p>
      ) : (
        <ul>
          {children.map((c) => (
            <li key={c.id}>
              {isRetrain(c) ? 'retrain' : `fork at iteration ${c.forkIteration ?? 0}`}:{' '}
              <Link to={`/runs/${c.id}`}>{c.name}</Link> <MethodName name={c.method} />
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
