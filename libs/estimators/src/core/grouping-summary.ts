import type { MethodSummary } from '../registry/method';
import { typedReads } from '../typed-arrays';

const { intAt } = typedReads;

/** Batch-level facts about a partition into step groups or clusters. */
export function groupingSummary(count: Int32Array, prefix: string): MethodSummary {
  let nonEmpty = 0;
  let singletons = 0;
  let members = 0;
  for (const c of count) {
    if (c === 0) continue;
    nonEmpty++;
    members += c;
    if (c === 1) singletons++;
  }
  return {
    [`${prefix}Count`]: nonEmpty,
    [`${prefix}MeanSize`]: nonEmpty ? members / nonEmpty : 0,
    singletonRate: members ? singletons / members : 0,
  };
}

/** Per step: the size of its bucket. */
export function bucketSizes(bucketOf: Int32Array, count: Int32Array): Int32Array {
  const out = new Int32Array(bucketOf.length);
  for (let k = 0; k < bucketOf.length; k++) out[k] = intAt(count, intAt(bucketOf, k));
  return out;
}

/** Per step: 1 if its bucket has exactly one member. */
export function singletonFlags(sizes: Int32Array): Uint8Array {
  const out = new Uint8Array(sizes.length);
  for (let k = 0; k < sizes.length; k++) out[k] = sizes[k] === 1 ? 1 : 0;
  return out;
}

/** Per step: the size of its group and whether it is alone in it (the singleton diagnostic). */
export function groupSizeDiagnostics(bucketOf: Int32Array, count: Int32Array) {
  const size = bucketSizes(bucketOf, count);
  return { stepGroupSize: size, singleton: singletonFlags(size) };
}
