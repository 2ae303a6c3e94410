import { bootstrapWeighted, type BootstrapOptions, type Interval } from '@creditlab/stats';

/**
 * The policy-gradient cosine with intervals over resampled tasks. The batch gradient is a sum over
 * tasks, so a resample of tasks with multiplicities w has the gradient Σ_t w_t·g_t, and
 *
 *   cos = wᵀ·C·w / √(wᵀ·S·w · wᵀ·X·w),  C[s][t] = ⟨g_s, x_t⟩, S[s][t] = ⟨g_s, g_t⟩, X[s][t] = ⟨x_s, x_t⟩
 *
 * (g: a row's per-task gradients, x: the exact advantages'). Each draw keeps only these T × T inner
 * products, not the gradients; a resample applies the same task multiplicities to every draw and
 * takes the mean of the draws' cosines, as the point estimate (all weights 1) does.
 */
export class GradientCosines {
  private readonly draws: { exact: Float64Array; cross: Float64Array[]; self: Float64Array[] }[] =
    [];
  private exactGradients: Float64Array[] = [];

  constructor(
    private readonly rows: number,
    private readonly tasks: number,
  ) {}

  /** Starts a draw with the exact advantages' gradient of each task. */
  beginDraw(exact: Float64Array[]): void {
    this.exactGradients = exact;
    const gram = this.gram(exact, exact);
    this.draws.push({ exact: gram, cross: [], self: [] });
  }

  /** Adds row r's per-task gradients to the current draw (the exact ones themselves: no new products). */
  addRow(r: number, gradients: Float64Array[]): void {
    const draw = this.draws.at(-1)!;
    const same = gradients === this.exactGradients;
    draw.cross[r] = same ? draw.exact : this.gram(gradients, this.exactGradients);
    draw.self[r] = same ? draw.exact : this.gram(gradients, gradients);
  }

  /**
   * Row r's cosine on draw d for task multiplicities w. A zero gradient from the row (GRPO where every
   * resampled group's returns are equal) moves nothing along the exact one: 0, as the within-group
   * correlation scores a constant row. A zero exact gradient leaves the draw out: NaN.
   */
  cosine(r: number, d: number, w: Float64Array): number {
    const draw = this.draws[d]!;
    const gg = quadratic(draw.self[r]!, w);
    const xx = quadratic(draw.exact, w);
    if (xx <= 0) return NaN;
    if (gg <= 0) return 0;
    return quadratic(draw.cross[r]!, w) / Math.sqrt(gg * xx);
  }

  /** Row r's mean cosine over the draws whose exact gradient is not zero (NaN if none is). */
  meanCosine(r: number, w: Float64Array): number {
    let sum = 0;
    let n = 0;
    for (let d = 0; d < this.draws.length; d++) {
      const c = this.cosine(r, d, w);
      if (Number.isNaN(c)) continue;
      sum += c;
      n++;
    }
    return n ? sum / n : NaN;
  }

  /**
   * Every row's mean cosine [95 % interval], and every row's difference from each reference row
   * (`vs[i][r]`: row r minus references[i], on the same resamples).
   */
  intervals(
    references: number[],
    options: BootstrapOptions,
  ): { cosine: Interval[]; vs: Interval[][] } {
    const pairs = references.flatMap((ref) =>
      Array.from({ length: this.rows }, (_, r) => [r, ref] as [number, number]),
    );
    const boot = bootstrapWeighted(
      this.tasks,
      this.rows,
      (w, out) => {
        for (let r = 0; r < this.rows; r++) out[r] = this.meanCosine(r, w);
      },
      pairs,
      options,
    );
    return {
      cosine: boot.scores,
      vs: references.map((_, i) => boot.differences.slice(i * this.rows, (i + 1) * this.rows)),
    };
  }

  /** M[s][t] = ⟨a_s, b_t⟩, T × T row-major (symmetric when a is b: half the products). */
  private gram(a: Float64Array[], b: Float64Array[]): Float64Array {
    const T = this.tasks;
    const m = new Float64Array(T * T);
    for (let s = 0; s < T; s++)
      for (let t = a === b ? s : 0; t < T; t++) {
        const v = dot(a[s]!, b[t]!);
        m[s * T + t] = v;
        if (a === b) m[t * T + s] = v;
      }
    return m;
  }
}

function dot(a: Float64Array, b: Float64Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i] as number) * (b[i] as number);
  return s;
}

/** wᵀ·M·w for a T × T row-major M. */
function quadratic(m: Float64Array, w: Float64Array): number {
  const T = w.length;
  let s = 0;
  for (let i = 0; i < T; i++) {
    const wi = w[i] as number;
    if (wi === 0) continue;
    let row = 0;
    for (let j = 0; j < T; j++) row += (m[i * T + j] as number) * (w[j] as number);
    s += wi * row;
  }
  return s;
}
