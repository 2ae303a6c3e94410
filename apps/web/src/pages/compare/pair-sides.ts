import type { Comparison, MethodPair } from '../../api/compare-api';
import type { MethodInput } from '../../api/types';
import { methodLabel } from '../../components/format';

/** One side of a pair: its place among the compared methods, its method (the colour) and its label. */
export interface PairSide {
  index: number;
  method: string;
  /** As the summary names it: the method and the parameters given, e.g. `gigpo (gamma=0.5)`. */
  label: string;
}

/**
 * The compared method at `index`, named as the summary names it. Its method is the one asked for
 * (the server says `gigpo#1` for a method compared twice, which is no method's colour).
 */
export function methodSide(
  index: number,
  comparison: Pick<Comparison, 'methods'>,
  methods: MethodInput[],
): PairSide {
  const method = methods[index]?.name ?? comparison.methods[index]?.method ?? '?';
  return { index, method, label: methodLabel(methods[index] ?? { name: method }) };
}

/** The two sides of a pair, named as the summary table names the methods. */
export function pairSides(
  pair: Pick<MethodPair, 'aIndex' | 'bIndex'>,
  comparison: Pick<Comparison, 'methods'>,
  methods: MethodInput[],
): [PairSide, PairSide] {
  return [
    methodSide(pair.aIndex, comparison, methods),
    methodSide(pair.bIndex, comparison, methods),
  ];
}
