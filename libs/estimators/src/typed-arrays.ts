/**
 * Element reads for the library's loops over typed arrays.
 *
 * With `noUncheckedIndexedAccess`, `xs[k]` has type `number | undefined`; these read the
 * element as a `number`, without a runtime check: the loops stay in bounds by construction
 * (offset arrays and ids come from the builder).
 *
 * Bind them once per module and call the local names:
 *
 *   const { at, intAt } = typedReads;

 *
 * Both ways a TypeScript import is compiled to CommonJS here (esbuild under tsx, swc for the
 * server and Jest) turn `import { at }` into a getter call on every read; in a measured backward
 * scan that was 9× slower under tsx and 1.4× under swc, while the local binding costs nothing
 * against a plain `xs[k]`. For the same reason there is one function per element type: V8
 * specialises an element load for the array types that reached it, and a single `at` that saw
 * all four types made the grouping loops about 1.5× slower.
 */
export const typedReads = {
  /** `xs[k]` of a Float64Array (values: rewards, returns, advantages). */
  at: (xs: Float64Array, k: number): number => xs[k] as number,
  /** `xs[k]` of an Int32Array (ids, offsets, counts). */
  intAt: (xs: Int32Array, k: number): number => xs[k] as number,
  /** `xs[k]` of a Uint8Array (flags and codes). */
  byteAt: (xs: Uint8Array, k: number): number => xs[k] as number,
  /** `xs[k]` of a Float32Array (embeddings). */
  f32At: (xs: Float32Array, k: number): number => xs[k] as number,
} as const;
