import { EstimatorInputError, type BatchLocation } from '../errors';
import { OUTCOME, type ColumnarBatch, type StepField } from './columnar-batch';
import { resolveOutcome, type Outcome } from './rollout-batch';
import { bootstrapColumns } from './bootstrap';

/** One step as a producer hands it to the builder (JSON parser, database reader, generator). */
export interface StepInput {
  state: string;
  action: string;
  reward: number;
  nll?: number;
  tokenLogprobs?: ArrayLike<number>;
  embedding?: ArrayLike<number>;
  value?: number;
  nextState?: string;
  nextValue?: number;
}

/**
 * Builds a `ColumnarBatch` group by group, trajectory by trajectory, step by
 * step, validating as it goes (finite numbers, unique ids, one embedding
 * dimension, non-empty trajectories). Every rejection names the group id,
 * trajectory id and step index. Used by the JSON reader, and by any producer
 * that has steps in hand without JSON (the server's row reader, benchmarks).
 */
export class ColumnarBatchBuilder {
  private readonly groupIds: string[] = [];
  private readonly trajectoryIds: string[] = [];
  private readonly seenGroupIds = new Set<string>();
  private readonly seenTrajectoryIds = new Set<string>();
  private readonly groupTrajectoryOffsets: number[] = [0];
  private readonly trajectoryStepOffsets: number[] = [0];
  private readonly outcomes: number[] = [];
  private readonly nextStateText: (string | undefined)[] = [];
  private readonly nextValue: number[] = [];
  private readonly groupStateOffsets: number[] = [0];
  private readonly groupActionOffsets: number[] = [0];
  private readonly stateTexts: string[] = [];
  private readonly actionTexts: string[] = [];
  private stateDict = new Map<string, number>();
  private actionDict = new Map<string, number>();

  private capacity: number;
  private stepCount = 0;
  private reward: Float64Array;
  private nll: Float64Array;
  private value: Float64Array;
  private stateId: Int32Array;
  private actionId: Int32Array;
  private embedding = new Float32Array(0);
  private embeddingDim = 0;
  private readonly firstMissing: Record<StepField, number> = { nll: -1, value: -1, embedding: -1 };

  private inGroup = false;
  private inTrajectory = false;
  /** Index of the current group's first trajectory, and of the current trajectory's first step. */
  private groupFirstTrajectory = 0;
  private trajectoryFirstStep = 0;
  private trajectoryOutcome: Outcome | undefined;
  private trajectoryReturn = 0;
  private lastStep: StepInput | undefined;

  constructor(expectedSteps = 1024) {
    this.capacity = Math.max(16, expectedSteps);
    this.reward = new Float64Array(this.capacity);
    this.nll = new Float64Array(this.capacity);
    this.value = new Float64Array(this.capacity);
    this.stateId = new Int32Array(this.capacity);
    this.actionId = new Int32Array(this.capacity);
  }

  beginGroup(id: string): void {
    if (this.inGroup) this.endGroup();
    const groupIndex = this.groupIds.length;
    if (this.seenGroupIds.has(id)) {
      this.fail(`duplicate group id ${JSON.stringify(id)}`, { path: `groups[${groupIndex}].id` });
    }
    this.seenGroupIds.add(id);
    this.groupIds.push(id);
    this.groupFirstTrajectory = this.trajectoryIds.length;
    this.stateDict = new Map();
    this.actionDict = new Map();
    this.inGroup = true;
  }

  beginTrajectory(id: string, outcome?: Outcome): void {
    if (!this.inGroup) throw new Error('beginTrajectory() outside a group');
    if (this.inTrajectory) this.endTrajectory();
    this.trajectoryIds.push(id);
    if (this.seenTrajectoryIds.has(id)) {
      this.fail(`duplicate trajectory id ${JSON.stringify(id)}`, {
        ...this.groupLocation(),
        path: `${this.trajectoryPath()}.id`,
      });
    }
    this.seenTrajectoryIds.add(id);
    this.trajectoryOutcome = outcome;
    this.trajectoryReturn = 0;
    this.trajectoryFirstStep = this.stepCount;
    this.lastStep = undefined;
    this.inTrajectory = true;
  }

  addStep(step: StepInput): void {
    if (!this.inTrajectory) throw new Error('addStep() outside a trajectory');
    const k = this.stepCount;
    if (k === this.capacity) this.grow();
    this.reward[k] = this.finite(step.reward, 'reward');
    this.trajectoryReturn += step.reward;
    this.stateId[k] = intern(this.stateDict, this.stateTexts, step.state);
    this.actionId[k] = intern(this.actionDict, this.actionTexts, step.action);
    this.nll[k] = this.meanNll(step);
    if (step.value === undefined) {
      this.noteMissing('value');
      this.value[k] = NaN;
    } else {
      this.value[k] = this.finite(step.value, 'value');
    }
    this.storeEmbedding(step.embedding);
    if (step.nextValue !== undefined) this.finite(step.nextValue, 'nextValue');
    this.lastStep = step;
    this.stepCount = k + 1;
  }

  endTrajectory(): void {
    if (!this.inTrajectory) return;
    if (this.stepCount === this.trajectoryFirstStep) {
      this.fail('trajectory has no steps (every trajectory needs at least one)', {
        ...this.groupLocation(),
        trajectoryId: this.trajectoryIds[this.trajectoryIds.length - 1],
        path: `${this.trajectoryPath()}.steps`,
      });
    }
    this.outcomes.push(OUTCOME[resolveOutcome(this.trajectoryOutcome, this.trajectoryReturn)]);
    this.nextStateText.push(this.lastStep?.nextState);
    this.nextValue.push(this.lastStep?.nextValue ?? NaN);
    this.trajectoryStepOffsets.push(this.stepCount);
    this.inTrajectory = false;
  }

  endGroup(): void {
    if (!this.inGroup) return;
    this.endTrajectory();
    if (this.trajectoryIds.length === this.groupTrajectoryOffsets.at(-1)) {
      this.fail('group has no trajectories', {
        ...this.groupLocation(),
        path: `groups[${this.groupIds.length - 1}].trajectories`,
      });
    }
    this.groupTrajectoryOffsets.push(this.trajectoryIds.length);
    this.groupStateOffsets.push(this.stateTexts.length);
    this.groupActionOffsets.push(this.actionTexts.length);
    this.inGroup = false;
  }

  build(): ColumnarBatch {
    this.endGroup();
    if (this.groupIds.length === 0) this.fail('batch has no groups', { path: 'groups' });
    const n = this.stepCount;
    const batch = {
      groupCount: this.groupIds.length,
      trajectoryCount: this.trajectoryIds.length,
      stepCount: n,
      groupIds: this.groupIds,
      trajectoryIds: this.trajectoryIds,
      groupTrajectoryOffsets: Int32Array.from(this.groupTrajectoryOffsets),
      trajectoryStepOffsets: Int32Array.from(this.trajectoryStepOffsets),
      outcome: Uint8Array.from(this.outcomes),
      reward: this.reward.subarray(0, n),
      stateId: this.stateId.subarray(0, n),
      groupStateOffsets: Int32Array.from(this.groupStateOffsets),
      stateTexts: this.stateTexts,
      actionId: this.actionId.subarray(0, n),
      groupActionOffsets: Int32Array.from(this.groupActionOffsets),
      actionTexts: this.actionTexts,
      nll: this.nll.subarray(0, n),
      value: this.value.subarray(0, n),
      embedding: this.embedding.subarray(0, n * this.embeddingDim),
      embeddingDim: this.embeddingDim,
      firstMissing: { ...this.firstMissing },
    };
    const ends = {
      nextStateText: this.nextStateText,
      nextValue: Float64Array.from(this.nextValue),
    };
    return { ...batch, ...bootstrapColumns(batch, ends) };
  }

  private meanNll(step: StepInput): number {
    if (step.nll !== undefined) {
      if (step.tokenLogprobs !== undefined) this.finiteArray(step.tokenLogprobs, 'tokenLogprobs');
      return this.finite(step.nll, 'nll');
    }
    if (step.tokenLogprobs === undefined) {
      this.noteMissing('nll');
      return NaN;
    }
    const lp = step.tokenLogprobs;
    this.finiteArray(lp, 'tokenLogprobs');
    if (lp.length === 0) return NaN; // zero tokens: no H (docs/estimators.md, C12)
    let sum = 0;
    for (let j = 0; j < lp.length; j++) sum += lp[j] as number; // a number: checked above
    return -sum / lp.length;
  }

  private storeEmbedding(emb: ArrayLike<number> | undefined): void {
    if (emb === undefined) {
      this.noteMissing('embedding');
      return;
    }
    if (emb.length === 0) this.fail('embedding must not be empty', this.stepLocation('embedding'));
    if (this.embeddingDim === 0) {
      this.embeddingDim = emb.length;
      this.embedding = new Float32Array(this.capacity * emb.length);
    } else if (emb.length !== this.embeddingDim) {
      this.fail(
        `embedding has ${emb.length} dimensions, but earlier steps of this batch have ${this.embeddingDim} (all embeddings of a batch share one dimension)`,
        this.stepLocation('embedding'),
      );
    }
    this.finiteArray(emb, 'embedding');
    this.embedding.set(emb, this.stepCount * this.embeddingDim);
  }

  private noteMissing(field: StepField): void {
    if (this.firstMissing[field] < 0) this.firstMissing[field] = this.stepCount;
  }

  private finite(x: number, field: string): number {
    if (typeof x !== 'number' || !Number.isFinite(x)) {
      this.fail(`"${field}" must be a finite number, got ${show(x)}`, this.stepLocation(field));
    }
    return x;
  }

  private finiteArray(xs: ArrayLike<number>, field: string): void {
    for (let j = 0; j < xs.length; j++) {
      const x = xs[j];
      if (typeof x !== 'number' || !Number.isFinite(x)) {
        this.fail(
          `"${field}[${j}]" must be a finite number, got ${show(x)}`,
          this.stepLocation(`${field}[${j}]`),
        );
      }
    }
  }

  private grow(): void {
    this.capacity *= 2;
    this.reward = resize(this.reward, this.capacity);
    this.nll = resize(this.nll, this.capacity);
    this.value = resize(this.value, this.capacity);
    this.stateId = resize(this.stateId, this.capacity);
    this.actionId = resize(this.actionId, this.capacity);
    if (this.embeddingDim > 0)
      this.embedding = resize(this.embedding, this.capacity * this.embeddingDim);
  }

  private groupLocation(): BatchLocation {
    return { groupId: this.groupIds[this.groupIds.length - 1] };
  }

  private trajectoryPath(): string {
    const g = this.groupIds.length - 1;
    const t = this.trajectoryIds.length - 1 - this.groupFirstTrajectory;
    return `groups[${g}].trajectories[${t}]`;
  }

  private stepLocation(field: string): BatchLocation {
    const stepIndex = this.stepCount - this.trajectoryFirstStep;
    return {
      groupId: this.groupIds[this.groupIds.length - 1],
      trajectoryId: this.trajectoryIds[this.trajectoryIds.length - 1],
      stepIndex,
      path: `${this.trajectoryPath()}.steps[${stepIndex}].${field}`,
    };
  }

  private fail(message: string, location: BatchLocation): never {
    throw new EstimatorInputError('INVALID_BATCH', message, location);
  }
}

function intern(dict: Map<string, number>, texts: string[], text: string): number {
  let id = dict.get(text);
  if (id === undefined) {
    id = texts.length;
    texts.push(text);
    dict.set(text, id);
  }
  return id;
}

function resize<T extends Float64Array | Float32Array | Int32Array>(a: T, length: number): T {
  const b = new (a.constructor as new (n: number) => T)(length);
  b.set(a);
  return b;
}

function show(x: unknown): string {
  if (typeof x === 'number') return String(x);
  if (x === undefined) return 'nothing';
  const s = JSON.stringify(x);
  return s.length > 40 ? `${s.slice(0, 40)}…` : s;
}
