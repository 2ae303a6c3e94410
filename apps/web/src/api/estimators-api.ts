import { gql } from './graphql';
import type { Estimator } from './types';

let cached: Promise<Estimator[]> | undefined;

/** The estimator registry (the same for every key): read once. */
export function fetchEstimators(): Promise<Estimator[]> {
  cached ??= gql<{ estimators: Estimator[] }>(
    `{ estimators { name version description paper requires params { name type default allowed description } diagnostics { name kind description } } }`,
  ).then((a) => a.estimators);
  cached.catch(() => (cached = undefined));
  return cached;
}
