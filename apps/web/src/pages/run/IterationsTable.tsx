import { Link } from 'react-router';
import type { RunDetail } from '../../api/types';
import { fmt, pct } from '../../components/format';

/** One row per iteration: sizes, success, a few metrics, and a way into its trajectories. */
export function IterationsTable({ run }: { run: RunDetail }) {
  const names = [...new Set(run.iterations.flatMap((i) => Object.keys(i.metrics ?? {})))]
    .filter((n) => n !== 'successRate')
    .sort()
    .slice(0, 4);
  const recent = run.iterations.slice(-200).reverse();
  return (
    <div>
      <h2>Iterations</h2>
      {run.iterations.length > recent.length && (
        <p className="muted small">
          The last {recent.length} of {run.iterations.length}.
        </p>
      )}
      <div className="table-wrap scroll-y">
        <table className="grid" data-testid="iterations-table">
          <thead>
            <tr>
              <th className="num">Iteration</th>
              <th className="num">Groups</th>
              <th className="num">Trajectories</th>
              <th className="num">Steps</th>
              <th className="num">Training success</th>
              <th className="num">Held-out success</th>
              {names.map((n) => (
                <th key={n} className="num">
                  {n}
                </th>
              ))}
              <th />
            </tr>
          </thead>
          <tbody>
            {recent.map((it) => (
              <tr key={it.index}>
                <td className="num">{it.index}</td>
                <td className="num">{it.groupCount}</td>
                <td className="num">{it.trajectoryCount}</td>
                <td className="num">{it.stepCount.toLocaleString('en')}</td>
                <td className="num">{pct(it.metrics?.successRate)}</td>
                <td className="num">{pct(it.evaluationSuccessRate)}</td>
                {names.map((n) => (
                  <td key={n} className="num">
                    {typeof it.metrics?.[n] === 'number' ? fmt(it.metrics[n]) : '–'}
                  </td>
                ))}
                <td>
                  {it.groupCount > 0 && (
                    <>
                      <Link to={`/runs/${run.id}/iterations/${it.index}/groups/`}>
                        trajectories
                      </Link>{' '}
                      · <Link to={`/runs/${run.id}/compare?it=${it.index}`}>compare</Link>
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
