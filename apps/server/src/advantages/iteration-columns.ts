import { OUTCOME, type BatchInput, type ColumnarBatch } from '@creditlab/estimators';
import type { TupleFields } from './binary-copy';
import { TextIdDictionary } from './text-id-dictionary';
import type { TrajectoryShape } from './trajectory-shape';

/**
 * Which step columns a read fetches, and at which field of the binary COPY row each one sits
 * (−1: not read). `bootstrap` resolves next states against the state ids, so it reads states too.
 */
export class StepColumns {
  readonly state: boolean;
  readonly stateText: boolean;
  readonly action: boolean;
  readonly actionText: boolean;
  readonly names: string[] = ['reward'];
  readonly stateAt: number;
  readonly actionAt: number;
  readonly nllAt: number;
  readonly valueAt: number;
  readonly embeddingAt: number;
  readonly nextAt: number;

  constructor(inputs: ReadonlySet<BatchInput>) {
    this.stateText = inputs.has('stateText');
    this.state = this.stateText || inputs.has('state') || inputs.has('bootstrap');
    this.actionText = inputs.has('actionText');
    this.action = this.actionText || inputs.has('action');
    this.stateAt = this.take(this.state, 'state_id');
    this.actionAt = this.take(this.action, 'action_id');
    this.nllAt = this.take(inputs.has('nll'), 'nll', 'token_logprobs');
    this.valueAt = this.take(inputs.has('value'), 'value');
    this.embeddingAt = this.take(inputs.has('embedding'), 'embedding');
    this.nextAt = this.take(inputs.has('bootstrap'), 'next_state_id', 'next_value');
  }

  private take(wanted: boolean, ...columns: string[]): number {
    if (!wanted) return -1;
    this.names.push(...columns);
    return this.names.length - columns.length;
  }
}

/** The stored text id behind each batch-wide dictionary id, as two int32 halves. */
export interface TextIds {
  idsHi: number[];
  idsLo: number[];
}

/** A trajectory with steps, as the batch holds it (empty ones are left out, as the library requires). */
interface Layout {
  groupIds: string[];
  trajectoryIds: string[];
  groupTrajectoryOffsets: Int32Array;
  trajectoryStepOffsets: Int32Array;
  outcome: Uint8Array;
}

export function layoutOf(shape: TrajectoryShape[]): Layout {
  const groupIds: string[] = [];
  const trajectoryIds: string[] = [];
  const groupTrajectoryOffsets = [0];
  const trajectoryStepOffsets = [0];
  const outcome: number[] = [];
  let group: number | undefined;
  let steps = 0;
  for (const t of shape) {
    if (t.length === 0) continue;
    if (t.groupOrd !== group) {
      if (group !== undefined) groupTrajectoryOffsets.push(trajectoryIds.length);
      group = t.groupOrd;
      groupIds.push(t.groupId);
    }
    trajectoryIds.push(t.trajectoryId);
    outcome.push(OUTCOME[t.outcome]);
    steps += t.length;
    trajectoryStepOffsets.push(steps);
  }
  groupTrajectoryOffsets.push(trajectoryIds.length);
  return {
    groupIds,
    trajectoryIds,
    groupTrajectoryOffsets: Int32Array.from(groupTrajectoryOffsets),
    trajectoryStepOffsets: Int32Array.from(trajectoryStepOffsets),
    outcome: Uint8Array.from(outcome),
  };
}

/** The first step lacking each optional field (−1: none lacks it). */
interface Missing {
  nll: number;
  value: number;
  embedding: number;
}

/**
 * One iteration's columns, filled row by row from a binary COPY in canonical order, then turned
 * into the estimators' ColumnarBatch. Fields are decoded straight into typed arrays; state and
 * action texts become per-group dictionary ids by their stored text id (TextIdDictionary), so the
 * texts are read only if the method asks for them (`stateText`, `actionText`).
 */
export class IterationColumns {
  private readonly layout: Layout;
  private readonly n: number;
  private k = 0;
  /** Current trajectory and group (indices into the layout), and where the next trajectory starts. */
  private t = -1;
  private g = -1;
  private nextTrajectoryStart = 0;
  private readonly reward: Float64Array;
  private readonly stateId: Int32Array;
  private readonly actionId: Int32Array;
  private readonly groupStateOffsets: Int32Array;
  private readonly groupActionOffsets: Int32Array;
  readonly states: TextIdDictionary;
  readonly actions: TextIdDictionary;
  private readonly nll: Float64Array;
  private readonly value: Float64Array;
  private embedding = new Float32Array(0);
  private embeddingDim = 0;
  private readonly missing: Missing;
  private readonly next: { hi: Int32Array; lo: Int32Array; has: Uint8Array; value: Float64Array };
  private readonly bootstrapStateId: Int32Array;
  private readonly bootstrapValue: Float64Array;

  constructor(
    shape: TrajectoryShape[],
    private readonly columns: StepColumns,
  ) {
    const layout = layoutOf(shape);
    this.layout = layout;
    const n = layout.trajectoryStepOffsets[layout.trajectoryIds.length] as number;
    const trajectories = layout.trajectoryIds.length;
    this.n = n;
    const groups = layout.groupIds.length;
    this.reward = new Float64Array(n);
    this.stateId = new Int32Array(n);
    this.actionId = new Int32Array(n);
    this.groupStateOffsets = new Int32Array(groups + 1);
    this.groupActionOffsets = new Int32Array(groups + 1);
    this.states = new TextIdDictionary();
    this.actions = new TextIdDictionary();
    this.nll = new Float64Array(n).fill(NaN);
    this.value = new Float64Array(n).fill(NaN);
    this.missing = {
      nll: columns.nllAt < 0 ? 0 : -1,
      value: columns.valueAt < 0 ? 0 : -1,
      embedding: columns.embeddingAt < 0 ? 0 : -1,
    };
    this.next = {
      hi: new Int32Array(trajectories),
      lo: new Int32Array(trajectories),
      has: new Uint8Array(trajectories),
      value: new Float64Array(trajectories).fill(NaN),
    };
    this.bootstrapStateId = new Int32Array(trajectories).fill(-1);
    this.bootstrapValue = new Float64Array(trajectories).fill(NaN);
  }

  get stepCount(): number {
    return this.n;
  }

  /** The next step in canonical order. */
  add(f: TupleFields): void {
    const k = this.k++;
    if (k === this.nextTrajectoryStart) this.nextTrajectory();
    const { buf, start, length } = f;
    const c = this.columns;
    this.reward[k] = buf.readDoubleBE(start[0] as number);
    if (c.stateAt >= 0) {
      const at = start[c.stateAt] as number;
      const base = this.groupStateOffsets[this.g] as number;
      this.stateId[k] = base + this.states.intern(buf.readInt32BE(at), buf.readInt32BE(at + 4));
    }
    if (c.actionAt >= 0) {
      const at = start[c.actionAt] as number;
      const base = this.groupActionOffsets[this.g] as number;
      this.actionId[k] = base + this.actions.intern(buf.readInt32BE(at), buf.readInt32BE(at + 4));
    }
    if (c.nllAt >= 0) this.readNll(f, k);
    if (c.valueAt >= 0) {
      if ((length[c.valueAt] as number) < 0) this.noteMissing('value', k);
      else this.value[k] = buf.readDoubleBE(start[c.valueAt] as number);
    }
    if (c.embeddingAt >= 0) this.readEmbedding(f, k);
    if (c.nextAt >= 0 && k === this.nextTrajectoryStart - 1) this.readNext(f);
  }

  /** Mean token NLL as the batch builder computes it: `nll` if given, else −mean(tokenLogprobs). */
  private readNll(f: TupleFields, k: number): void {
    const at = this.columns.nllAt;
    if ((f.length[at] as number) >= 0) {
      this.nll[k] = f.buf.readDoubleBE(f.start[at] as number);
      return;
    }
    const bytes = f.length[at + 1] as number;
    if (bytes < 0) this.noteMissing('nll', k);
    if (bytes <= 0) return; // none given, or zero tokens: no H (docs/estimators.md, C12)
    const from = f.start[at + 1] as number;
    let sum = 0;
    for (let j = 0; j < bytes; j += 4) sum += f.buf.readFloatLE(from + j);
    this.nll[k] = -sum / (bytes / 4);
  }

  private readEmbedding(f: TupleFields, k: number): void {
    const bytes = f.length[this.columns.embeddingAt] as number;
    if (bytes < 0) {
      this.noteMissing('embedding', k);
      return;
    }
    const dim = bytes / 4;
    if (this.embeddingDim === 0) {
      this.embeddingDim = dim;
      this.embedding = new Float32Array(this.n * dim);
    } else if (dim !== this.embeddingDim) {
      // Ingest holds a run to one dimension: a different one here is a damaged projection.
      throw new Error(
        `stored embeddings of one iteration differ in dimension (${dim}, ${this.embeddingDim})`,
      );
    }
    const from = f.start[this.columns.embeddingAt] as number;
    new Uint8Array(this.embedding.buffer).set(f.buf.subarray(from, from + bytes), k * bytes);
  }

  /** A trajectory's last step: what a truncated end may bootstrap from. */
  private readNext(f: TupleFields): void {
    const at = this.columns.nextAt;
    if ((f.length[at] as number) >= 0) {
      const from = f.start[at] as number;
      this.next.hi[this.t] = f.buf.readInt32BE(from);
      this.next.lo[this.t] = f.buf.readInt32BE(from + 4);
      this.next.has[this.t] = 1;
    }
    if ((f.length[at + 1] as number) >= 0)
      this.next.value[this.t] = f.buf.readDoubleBE(f.start[at + 1] as number);
  }

  private noteMissing(field: keyof Missing, k: number): void {
    if (this.missing[field] < 0) this.missing[field] = k;
  }

  private nextTrajectory(): void {
    const { groupTrajectoryOffsets, trajectoryStepOffsets } = this.layout;
    this.t++;
    if (this.t === groupTrajectoryOffsets[this.g + 1]) this.nextGroup();
    this.nextTrajectoryStart = trajectoryStepOffsets[this.t + 1] as number;
  }

  private nextGroup(): void {
    if (this.g >= 0) this.endGroup();
    this.g++;
    const { groupTrajectoryOffsets: gt, trajectoryStepOffsets: ts } = this.layout;
    const steps = (ts[gt[this.g + 1] as number] as number) - (ts[gt[this.g] as number] as number);
    this.states.beginGroup(steps);
    this.actions.beginGroup(steps);
  }

  private endGroup(): void {
    const g = this.g;
    this.groupStateOffsets[g + 1] = (this.groupStateOffsets[g] as number) + this.states.size;
    this.groupActionOffsets[g + 1] = (this.groupActionOffsets[g] as number) + this.actions.size;
    if (this.columns.nextAt >= 0) this.resolveBootstraps(g);
  }

  /** Per truncated trajectory of group g: its nextState's id if that is a state of the group, and its nextValue. */
  private resolveBootstraps(g: number): void {
    const { groupTrajectoryOffsets: gt, outcome } = this.layout;
    const base = this.groupStateOffsets[g] as number;
    for (let i = gt[g] as number; i < (gt[g + 1] as number); i++) {
      if (outcome[i] !== OUTCOME.truncated) continue;
      this.bootstrapValue[i] = this.next.value[i] as number;
      if (!this.next.has[i]) continue;
      const local = this.states.lookup(this.next.hi[i] as number, this.next.lo[i] as number);
      this.bootstrapStateId[i] = local < 0 ? -1 : base + local;
    }
  }

  /** The batch, once every step is in; texts as given (empty unless the method reads them). */
  build(stateTexts: string[], actionTexts: string[]): ColumnarBatch {
    if (this.k !== this.n)
      throw new Error(`iteration read ${this.k} steps where its trajectories count ${this.n}`);
    if (this.g >= 0) this.endGroup();
    const l = this.layout;
    return {
      groupCount: l.groupIds.length,
      trajectoryCount: l.trajectoryIds.length,
      stepCount: this.n,
      groupIds: l.groupIds,
      trajectoryIds: l.trajectoryIds,
      groupTrajectoryOffsets: l.groupTrajectoryOffsets,
      trajectoryStepOffsets: l.trajectoryStepOffsets,
      outcome: l.outcome,
      reward: this.reward,
      stateId: this.stateId,
      groupStateOffsets: this.groupStateOffsets,
      stateTexts,
      actionId: this.actionId,
      groupActionOffsets: this.groupActionOffsets,
      actionTexts,
      bootstrapStateId: this.bootstrapStateId,
      bootstrapValue: this.bootstrapValue,
      nll: this.nll,
      value: this.value,
      embedding: this.embedding,
      embeddingDim: this.embeddingDim,
      firstMissing: { ...this.missing },
    };
  }
}
