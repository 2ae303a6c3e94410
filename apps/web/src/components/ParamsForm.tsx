import type { Estimator, EstimatorParam, Json } from '../api/types';

/** Enum values out of the schema's "one of "a", "b"" text. */
export const enumValues = (p: EstimatorParam): string[] =>
  [...p.allowed.matchAll(/"([^"]*)"/g)].map((m) => m[1]!);

interface Props {
  estimator: Estimator;
  value: Record<string, Json>;
  onChange(params: Record<string, Json>): void;
  /** Distinguishes the inputs of several forms on one page. */
  idPrefix: string;
}

/**
 * An estimator's parameters as a form generated from its schema: a number field, a yes/no choice or
 * a list of values per parameter, blank meaning the default (shown as the placeholder). Only the
 * parameters set differ from the defaults are sent.
 */
export function ParamsForm({ estimator, value, onChange, idPrefix }: Props) {
  if (!estimator.params.length) return <p className="muted small">No parameters.</p>;
  const set = (name: string, v: Json | undefined) => {
    const next = { ...value };
    if (v === undefined) delete next[name];
    else next[name] = v;
    onChange(next);
  };
  return (
    <div className="params">
      {estimator.params.map((p) => {
        const id = `${idPrefix}-${p.name}`;
        return (
          <label key={p.name} htmlFor={id} title={`${p.description} (${p.allowed})`}>
            <span className="param-name">{p.name}</span>
            <ParamInput id={id} param={p} value={value[p.name]} set={(v) => set(p.name, v)} />
          </label>
        );
      })}
    </div>
  );
}

function ParamInput({
  id,
  param,
  value,
  set,
}: {
  id: string;
  param: EstimatorParam;
  value: Json | undefined;
  set(v: Json | undefined): void;
}) {
  const def = param.default === null ? 'absent' : String(param.default);
  if (param.type === 'boolean' || param.type === 'enum') {
    const options = param.type === 'boolean' ? ['true', 'false'] : enumValues(param);
    return (
      <select
        id={id}
        value={value === undefined ? '' : String(value)}
        onChange={(e) =>
          set(
            e.target.value === ''
              ? undefined
              : param.type === 'boolean'
                ? e.target.value === 'true'
                : e.target.value,
          )
        }
      >
        <option value="">default ({def})</option>
        {options.map((o) => (
          <option key={o}>{o}</option>
        ))}
      </select>
    );
  }
  return (
    <input
      id={id}
      type="number"
      step="any"
      placeholder={def}
      value={typeof value === 'number' ? value : ''}
      onChange={(e) => set(e.target.value === '' ? undefined : Number(e.target.value))}
    />
  );
}
