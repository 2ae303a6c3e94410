import { typedReads } from '../typed-arrays';

const { at } = typedReads;

/** a + w·b, element by element: how methods add a weighted step term to an episode term. */
export function plusScaled(a: Float64Array, w: number, b: Float64Array): Float64Array {
  const out = new Float64Array(a.length);
  for (let k = 0; k < a.length; k++) out[k] = at(a, k) + w * at(b, k);
  return out;
}

/** a + b, element by element. */
export function plus(a: Float64Array, b: Float64Array): Float64Array {
  const out = new Float64Array(a.length);
  for (let k = 0; k < a.length; k++) out[k] = at(a, k) + at(b, k);
  return out;
}
