import { groupStepRange, type ColumnarBatch } from '../batch/columnar-batch';
import { typedReads } from '../typed-arrays';

const { at, f32At, intAt } = typedReads;

export interface Clusters {
  /** Global cluster id per step (clusters of task group g are numbered after those of g−1). */
  bucketOf: Int32Array;
  bucketCount: number;
  groupBucketOffsets: Int32Array;
  /** Cosine distance to the centroid when the step joined; NaN for a cluster founder. */
  distance: Float64Array;
}

/**
 * BiGPO's greedy single-pass cosine clustering (docs/estimators.md §1.4.4), per task
 * group in batch order. Each record's unit embedding φ goes to the nearest
 * open cluster (distance 1 − φ·ĉ, ties to the lowest index) if that distance
 * is ≤ ε, else founds a new cluster. The centroid ĉ is the normalised sum of
 * the members' φ (C23). A zero embedding founds a cluster no one can join.
 *
 * Cost: steps × clusters-per-group × dimension; the inner loop is a plain dot
 * product over a flat Float64Array of centroids.
 *
 * The distance is compared with ε plus `distanceRounding(d)`: a record whose embedding is identical
 * to a cluster's members gets a distance that is 0 only up to float64 rounding (the centroid is a
 * renormalised sum), and at ε = 0 it must still join.
 */
export function cosineClusters(batch: ColumnarBatch, epsilon: number): Clusters {
  const d = batch.embeddingDim;
  const radius = epsilon + distanceRounding(d);
  const bucketOf = new Int32Array(batch.stepCount);
  const distance = new Float64Array(batch.stepCount);
  const groupBucketOffsets = new Int32Array(batch.groupCount + 1);
  const phi = new Float64Array(d);
  let bucketCount = 0;
  for (let g = 0; g < batch.groupCount; g++) {
    const [lo, hi] = groupStepRange(batch, g);
    const clusters = new OpenClusters(d);
    for (let k = lo; k < hi; k++) {
      const zero = unitVector(batch.embedding, k * d, d, phi);
      const best = zero ? -1 : clusters.nearest(phi);
      if (best >= 0 && clusters.nearestDistance <= radius) {
        clusters.join(best, phi);
        bucketOf[k] = bucketCount + best;
        distance[k] = clusters.nearestDistance;
      } else {
        bucketOf[k] = bucketCount + clusters.found(phi, !zero);
        distance[k] = NaN;
      }
    }
    bucketCount += clusters.count;
    groupBucketOffsets[g + 1] = bucketCount;
  }
  return { bucketOf, bucketCount, groupBucketOffsets, distance };
}

/** The clusters of one task group: unit centroids and member sums in flat arrays, d per cluster. */
class OpenClusters {
  count = 0;
  /** Distance 1 − φ·ĉ to the cluster the last `nearest` returned. */
  nearestDistance = Infinity;
  private centroids: Float64Array;
  private sums: Float64Array;
  private open = new Uint8Array(16);

  constructor(private readonly d: number) {
    this.centroids = new Float64Array(16 * d);
    this.sums = new Float64Array(16 * d);
  }

  /** The open cluster with the smallest distance to φ (ties: the lowest number), or −1. */
  nearest(phi: Float64Array): number {
    let best = -1;
    this.nearestDistance = Infinity;
    for (let c = 0; c < this.count; c++) {
      if (!this.open[c]) continue;
      const dist = 1 - dot(phi, this.centroids, c * this.d, this.d);
      if (dist < this.nearestDistance) {
        this.nearestDistance = dist;
        best = c;
      }
    }
    return best;
  }

  join(c: number, phi: Float64Array): void {
    addToCentroid(this.sums, this.centroids, c * this.d, phi, this.d);
  }

  /** Opens a cluster with centroid φ (one no one can join for a zero embedding); returns its number. */
  found(phi: Float64Array, joinable: boolean): number {
    if (this.count * this.d === this.centroids.length) {
      this.centroids = grow(this.centroids);
      this.sums = grow(this.sums);
      this.open = grow(this.open);
    }
    this.centroids.set(phi, this.count * this.d);
    this.sums.set(phi, this.count * this.d);
    this.open[this.count] = joinable ? 1 : 0;
    return this.count++;
  }
}

/** Writes h/‖h‖ into `out`; returns true (and leaves zeros) for a zero vector. */
function unitVector(emb: Float32Array, offset: number, d: number, out: Float64Array): boolean {
  let ss = 0;
  for (let j = 0; j < d; j++) {
    const x = f32At(emb, offset + j);
    ss += x * x;
  }
  if (ss === 0) {
    out.fill(0);
    return true;
  }
  const inv = 1 / Math.sqrt(ss);
  for (let j = 0; j < d; j++) out[j] = f32At(emb, offset + j) * inv;
  return false;
}

function dot(a: Float64Array, b: Float64Array, offset: number, d: number): number {
  let s0 = 0;
  let s1 = 0;
  let j = 0;
  for (; j + 1 < d; j += 2) {
    s0 += at(a, j) * at(b, offset + j);
    s1 += at(a, j + 1) * at(b, offset + j + 1);
  }
  if (j < d) s0 += at(a, j) * at(b, offset + j);
  return s0 + s1;
}

function addToCentroid(
  sums: Float64Array,
  centroids: Float64Array,
  offset: number,
  phi: Float64Array,
  d: number,
): void {
  let ss = 0;
  for (let j = 0; j < d; j++) {
    const s = at(sums, offset + j) + at(phi, j);
    sums[offset + j] = s;
    ss += s * s;
  }
  // Opposite members can cancel out (only with ε near 2); a zero centroid then matches nothing better than distance 1.
  const inv = ss === 0 ? 0 : 1 / Math.sqrt(ss);
  for (let j = 0; j < d; j++) centroids[offset + j] = at(sums, offset + j) * inv;
}

/**
 * A bound on the float64 rounding of 1 − φ·ĉ for unit vectors of dimension d computed from the same
 * float32 embedding: the dot product's d terms (at most d·u for unit vectors, u = 2⁻⁵³) plus the two
 * normalisations (about (d/2 + 2)·u each), doubled for margin: (4d + 8)·u = (2d + 4)·Number.EPSILON,
 * 1.5e-14 at d = 32. It is far below any distance ε is meant to resolve (1e-3 is an angle of 0.045
 * rad; this is one of 2e-7 rad): besides rounding it absorbs only embeddings that differ in their last
 * float32 bits. A tolerance in float32 ulps (1.2e-7 on the distance, an angle of 5e-4 rad) would merge
 * embeddings that clearly differ: the distance is computed in float64.
 */
export function distanceRounding(d: number): number {
  return (2 * d + 4) * Number.EPSILON;
}

/** Clusters whose members carry more than one distinct anchor text (what BiGPO merged beyond exact hashing). */
export function mergedClusterCount(batch: ColumnarBatch, clusters: Clusters): number {
  const firstState = new Int32Array(clusters.bucketCount).fill(-1);
  const merged = new Uint8Array(clusters.bucketCount);
  for (let k = 0; k < batch.stepCount; k++) {
    const c = intAt(clusters.bucketOf, k);
    if (firstState[c] === -1) firstState[c] = intAt(batch.stateId, k);
    else if (firstState[c] !== batch.stateId[k]) merged[c] = 1;
  }
  return merged.reduce((a, b) => a + b, 0);
}

function grow<T extends Float64Array | Uint8Array>(a: T): T {
  const b = new (a.constructor as new (n: number) => T)(a.length * 2);
  b.set(a);
  return b;
}
