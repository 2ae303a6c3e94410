import { useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { fetchEstimators } from '../../api/estimators-api';
import type { MethodInput } from '../../api/types';
import { MethodName } from '../../components/MethodName';
import { ParamsForm } from '../../components/ParamsForm';

interface Props {
  methods: MethodInput[];
  iterations: string;
  onSubmit(methods: MethodInput[], iterations: string): void;
}

/** Up to 12 methods, each with its parameters (a form from the estimator's schema), and iterations. */
export function CompareForm({ methods, iterations, onSubmit }: Props) {
  const estimators = useQuery({ queryKey: ['estimators'], queryFn: fetchEstimators });
  const [rows, setRows] = useState<MethodInput[]>(methods);
  const [its, setIts] = useState(iterations);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onSubmit(rows, its.trim());
  };
  const update = (i: number, m: MethodInput) => setRows(rows.map((r, k) => (k === i ? m : r)));
  return (
    <form className="compare-form" onSubmit={submit} aria-label="Methods to compare">
      {rows.map((m, i) => {
        const est = estimators.data?.find((e) => e.name === m.name);
        return (
          <fieldset key={i} className="method-row">
            <legend>
              <MethodName name={m.name} label={`method ${i + 1}`} />
            </legend>
            <select
              aria-label={`method ${i + 1}`}
              value={m.name}
              onChange={(e) => update(i, { name: e.target.value })}
            >
              {estimators.data?.map((e) => (
                <option key={e.name}>{e.name}</option>
              ))}
            </select>
            {est && (
              <ParamsForm
                estimator={est}
                value={m.params ?? {}}
                onChange={(p) => update(i, { name: m.name, params: p })}
                idPrefix={`m${i}`}
              />
            )}
            <button
              type="button"
              className="link"
              disabled={rows.length < 2}
              onClick={() => setRows(rows.filter((_, k) => k !== i))}
            >
              remove
            </button>
          </fieldset>
        );
      })}
      <div className="form-row">
        <button
          type="button"
          disabled={rows.length >= 12}
          onClick={() => setRows([...rows, { name: 'grpo' }])}
        >
          Add a method
        </button>
        <label>
          Iterations{' '}
          <input
            value={its}
            onChange={(e) => setIts(e.target.value)}
            placeholder="all, or 0,3,5"
            aria-label="Iterations"
          />
        </label>
        <button type="submit">Compare</button>
      </div>
    </form>
  );
}
