import { methodIndexOf, type Comparison, type MethodPair } from '../../api/compare-api';
import type { MethodInput } from '../../api/types';
import { methodLabel } from '../../components/format';

/** One side of a pair: its place among the compared methods, its method (the colour) and its label. */
export interface PairSide {
  index: number;
  method: string;
  /** As the summary names it: the method and the parameters given, e.g. `gigpo (gamma=0.5)`. */
  label: string;
}

/** A compared method as the server names it (`gigpo`, `gigpo#1`), named as the summary names it. */
export function methodSide(
  name: string,
  comparison: Pick<Comparison, 'methods'>,
  methods: MethodInput[],
): PairSide {
  const index = methodIndexOf(name, comparison.methods);
  const method = comparison.methods[index]?.method ?? name;
  return { index, method, label: methodLabel(methods[index] ?? { name: method }) };
}

/** The two sides of a pair, named as the summary table names the methods. */
export function pairSides(
  pair: Pick<MethodPair, 'a' | 'b'>,
  comparison: Pick<Comparison, 'methods'>,
  methods: MethodInput[],
): [PairSide, PairSide] {
  return [methodSide(pair.a, comparison, methods), methodSide(pair.b, comparison, methods)];
}
