import { useState } from 'react';
import { Link } from 'react-router';
import type { RunDetail } from '../../api/types';
import { fmt, pct } from '../../components/format';

/** One row per iteration: sizes, success, a few metrics, and a way into its trajectories. */
export function IterationsTable({ run }: { run: RunDetail }) {
  const names = [...new Set(run.iterations.flatMap((i) => Object.keys(i.metrics ?? {})))]
    .filter((n) => n !== 'successRate')
    .sort()
    .slice(0, 4);
  // Newest first, a page of PAGE rows at a time: a long run's table stays light, and its first
  // iterations are a few clicks away (they were out of reach past the newest 200).
  const [page, setPage] = useState(0);
  const total = run.iterations.length;
  const pages = Math.max(1, Math.ceil(total / PAGE));
  const shown = Math.min(page, pages - 1);
  const end = total - shown * PAGE;
  const recent = run.iterations.slice(Math.max(0, end - PAGE), end).reverse();
  return (
    <div>
      <h2>Iterations</h2>
      {pages > 1 && (
        <div className="pager" data-testid="iterations-pager">
          <button type="button" disabled={shown === 0} onClick={() => setPage(shown - 1)}>
            ← Newer
          </button>
          <span>
            iterations {recent.at(-1)?.index}–{recent[0]?.index} ({recent.length} of{' '}
            {total.toLocaleString('en')})
          </span>
          <button type="button" disabled={shown >= pages - 1} onClick={() => setPage(shown + 1)}>
            Older →
          </button>
        </div>
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

/** Iterations shown at a time. */
const PAGE = 200;
