import type { Estimator, Json, MethodInput } from '../../api/types';
import { fmt, methodLabel } from '../../components/format';
import { MethodName } from '../../components/MethodName';

/** The diagnostics worth reading first: why a step got the credit it got. */
const HEADLINE = [
  'singleton',
  'stepGroupSize',
  'gate',
  'lambda',
  'clusterId',
  'advEpisode',
  'advStep',
];

const show = (v: Json) =>
  typeof v === 'number'
    ? fmt(v)
    : v === null
      ? '–'
      : typeof v === 'object'
        ? JSON.stringify(v)
        : String(v);

/** A method's per-step diagnostics, named and described from the estimator registry. */
export function DiagnosticsCard({
  method,
  value,
  diagnostics,
  estimator,
}: {
  method: MethodInput;
  value: number;
  diagnostics: Record<string, Json> | null;
  estimator: Estimator | undefined;
}) {
  const entries = Object.entries(diagnostics ?? {}).sort(([a], [b]) => rank(a) - rank(b));
  const describe = (name: string) =>
    estimator?.diagnostics.find((d) => d.name === name)?.description ?? '';
  return (
    <div className="diagnostics" role="tooltip" data-testid="diagnostics">
      <div className="diag-head">
        <MethodName name={method.name} label={methodLabel(method)} />: advantage <b>{fmt(value)}</b>
      </div>
      {entries.length === 0 ? (
        <p className="muted small">No per-step diagnostics for this method.</p>
      ) : (
        <table>
          <tbody>
            {entries.map(([k, v]) => (
              <tr key={k} className={HEADLINE.includes(k) ? 'headline' : ''}>
                <th>{k}</th>
                <td>{show(v)}</td>
                <td className="muted">{describe(k)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

function rank(name: string): number {
  const i = HEADLINE.indexOf(name);
  return i < 0 ? HEADLINE.length : i;
}
