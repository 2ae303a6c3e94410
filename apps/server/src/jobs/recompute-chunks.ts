/**
 * How a recompute job groups iterations: each chunk is read in one snapshot, estimated as one task
 * per estimator thread and stored with one statement, so what a chunk costs besides its steps
 * (round trips, thread hand-overs, a progress notice) is paid once per chunk. Chunks are sized by
 * steps, not by iterations: a run of many small iterations would otherwise pay those costs far more
 * often than it pays for estimating (a 1M-step run of 1.5k-step iterations took 43 chunks of 16).
 */
export interface ChunkLimits {
  /** A chunk stops growing before it would pass this many steps (a larger iteration is a chunk alone). */
  steps: number;
  /** …or at this many iterations (the store statement has a few parameters per iteration). */
  iterations: number;
}

/**
 * The store statement has a few parameters per iteration, so a chunk holds at most this many. The
 * step limit is the server's setting (CREDITLAB_RECOMPUTE_CHUNK_STEPS, 131,072 by default: three
 * chunks in flight — read, estimated, stored — are tens of MB).
 */
export const CHUNK_ITERATIONS = 256;

/** CREDITLAB_RECOMPUTE_CHUNK_STEPS's default. */
export const DEFAULT_CHUNK_STEPS = 131_072;

/** `iterations` in order, cut into consecutive chunks within `limits`; `steps(i)` is iteration i's step count. */
export function chunkIterations(
  iterations: readonly number[],
  steps: (iteration: number) => number,
  limits: ChunkLimits,
): number[][] {
  const chunks: number[][] = [];
  let chunk: number[] = [];
  let total = 0;
  for (const iteration of iterations) {
    const n = steps(iteration);
    if (chunk.length > 0 && (total + n > limits.steps || chunk.length >= limits.iterations)) {
      chunks.push(chunk);
      chunk = [];
      total = 0;
    }
    chunk.push(iteration);
    total += n;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}
