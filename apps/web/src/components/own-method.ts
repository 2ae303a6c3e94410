import type { Estimator, Json, MethodInput } from '../api/types';

/**
 * The method a run trained with, and the parameters it gave that the registry's estimator takes
 * (a run's params may hold others, which no estimator would accept). Compared or recomputed as
 * "the run's own", it must be the advantages the run saw: the defaults are another method.
 */
export function ownMethod(
  run: { method: string; params: Record<string, Json> | null },
  estimators: Estimator[] | undefined,
): MethodInput {
  const known = estimators?.find((e) => e.name === run.method);
  const params = Object.fromEntries(
    Object.entries(run.params ?? {}).filter(([k]) => known?.params.some((p) => p.name === k)),
  );
  return Object.keys(params).length ? { name: run.method, params } : { name: run.method };
}

/**
 * Parameters that differ from the estimator's defaults: what names a set (a job's set stores every
 * parameter resolved, `gaca (gamma=0.99, stepWeight=1, …)` for the defaults alone).
 */
export function givenParams(
  method: string,
  params: Record<string, unknown>,
  estimators: Estimator[] | undefined,
): Record<string, unknown> {
  const known = estimators?.find((e) => e.name === method);
  if (!known) return params;
  return Object.fromEntries(
    Object.entries(params).filter(([k, v]) => {
      const p = known.params.find((q) => q.name === k);
      return !p || JSON.stringify(p.default) !== JSON.stringify(v);
    }),
  );
}
