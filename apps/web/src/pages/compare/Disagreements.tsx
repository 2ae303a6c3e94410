import { Link } from 'react-router';
import type { Comparison, MethodPair } from '../../api/compare-api';
import type { MethodInput, RunDetail } from '../../api/types';
import { fmt, methodsParam } from '../../components/format';
import { MethodName } from '../../components/MethodName';
import { pairSides } from './pair-sides';

/** The steps where the pair disagrees most, each a link to its group's trajectories. */
export function Disagreements({
  run,
  methods,
  comparison,
  pair,
}: {
  run: RunDetail;
  methods: MethodInput[];
  comparison: Comparison;
  pair: MethodPair;
}) {
  const [a, b] = pairSides(pair, comparison, methods);
  return (
    <>
      <h2>
        Largest disagreements: <MethodName name={a.method} label={a.label} /> vs{' '}
        <MethodName name={b.method} label={b.label} />
      </h2>
      <p className="muted small" data-testid="disagreements-order">
        The steps where the two differ most once each method&apos;s advantages are standardised
        (less their mean, over their standard deviation across the steps compared), largest
        difference first.
      </p>
      {pair.disagreements.length === 0 ? (
        <p data-testid="disagreements-none">
          None: the two agree on every step compared, once standardised.
        </p>
      ) : (
        <table className="grid" data-testid="disagreements-table">
          <thead>
            <tr>
              <th className="num">Iteration</th>
              <th>Group</th>
              <th>Trajectory</th>
              <th className="num">Step</th>
              <th>Action</th>
              <th className="num">Reward</th>
              <th className="num">{a.label}</th>
              <th className="num">{b.label}</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {pair.disagreements.map((d, k) => {
              const href = `/runs/${run.id}/iterations/${d.iteration}/groups/${encodeURIComponent(d.groupId)}?m=${encodeURIComponent(methodsParam(methods))}&t=${encodeURIComponent(d.trajectoryId)}&s=${d.stepIndex}`;
              return (
                <tr key={k} data-testid="disagreement-row">
                  <td className="num">{d.iteration}</td>
                  <td>
                    <code>{d.groupId}</code>
                  </td>
                  <td>
                    <code>{d.trajectoryId}</code>
                  </td>
                  <td className="num">{d.stepIndex}</td>
                  <td className="clip">{d.action}</td>
                  <td className="num">{fmt(d.reward)}</td>
                  <td className="num">{fmt(d.advantages[a.index] ?? NaN)}</td>
                  <td className="num">{fmt(d.advantages[b.index] ?? NaN)}</td>
                  <td>
                    <Link to={href} data-testid="trajectory-link">
                      trajectory
                    </Link>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </>
  );
}
