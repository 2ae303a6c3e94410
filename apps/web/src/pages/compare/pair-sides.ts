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

/** The two sides of a pair, named as the summary table names the methods. */
export function pairSides(
  pair: Pick<MethodPair, 'a' | 'b'>,
  comparison: Pick<Comparison, 'methods'>,
  methods: MethodInput[],
): [PairSide, PairSide] {
  const side = (name: string): PairSide => {
    const index = methodIndexOf(name, comparison.methods);
    const method = comparison.methods[index]?.method ?? name;
    return { index, method, label: methodLabel(methods[index] ?? { name: method }) };
  };
  return [side(pair.a), side(pair.b)];
}
