// The seeded PRNG the environments use (pure, no dependencies): one implementation for all test data.
import { seededRandom } from '@creditlab/random';
import type { StepInput } from '../../src/batch/columnar-batch-builder';
import type {
  Outcome,
  RolloutBatch,
  RolloutStep,
  RolloutTrajectory,
} from '../../src/batch/rollout-batch';

/** Anything that takes steps group by group: `ColumnarBatchBuilder`, or `JsonBatchSink` below. */
export interface RolloutSink {
  beginGroup(id: string): void;
  beginTrajectory(id: string, outcome?: Outcome): void;
  addStep(step: StepInput): void;
  endTrajectory(): void;
  endGroup(): void;
}

export interface SyntheticShape {
  groups: number;
  /** Trajectories per group (G). */
  groupSize: number;
  /** Longest trajectory; lengths vary from 1 to this. */
  maxSteps: number;
  /** Distinct states a group's trajectories wander among (smaller → more revisits). */
  statesPerGroup?: number;
  embeddingDim?: number;
  /** Characters of padding per observation, for realistic text lengths. */
  textLength?: number;
  /** Emit optional fields (nll/tokenLogprobs, value, embedding, nextState/nextValue). */
  withOptionalFields?: boolean;
  /** Leave out embeddings even when emitting the other optional fields (they dominate memory). */
  withoutEmbeddings?: boolean;
  /** Stop after the group in which the total step count reaches this. */
  maxTotalSteps?: number;
}

/**
 * Agent-like rollouts: each group is one task whose G trajectories walk among
 * a small set of states (so anchor states recur across and within
 * trajectories), take actions from a small menu (some invalid: −0.1 and the
 * state stays), and end in success (reward 1), failure, or truncation at the
 * step cap. Embeddings are a per-state direction plus small noise, so cosine
 * clusters form around states but do not coincide with them exactly.
 */
export function generateRollouts(sink: RolloutSink, shape: SyntheticShape, seed: number): void {
  const rand = seededRandom(seed);
  const pick = (n: number) => Math.floor(rand() * n);
  const d = shape.embeddingDim ?? 8;
  const S = shape.statesPerGroup ?? 6;
  const pad = ' '.repeat(Math.max(0, (shape.textLength ?? 0) - 40));
  const optional = shape.withOptionalFields ?? true;
  const embedding = new Float32Array(d);
  let total = 0;
  for (let g = 0; g < shape.groups && total < (shape.maxTotalSteps ?? Infinity); g++) {
    const directions = Array.from({ length: S }, () =>
      Array.from({ length: d }, () => rand() * 2 - 1),
    );
    const stateText = (s: number) =>
      `[task ${g}] You are in room ${s}. You see ${s % 3} items.${pad}`;
    const goal = S - 1;
    sink.beginGroup(`g${g}`);
    for (let i = 0; i < shape.groupSize; i++) {
      const length = 1 + pick(shape.maxSteps);
      const steps: StepInput[] = [];
      let s = 0;
      let outcome: Outcome = 'truncated';
      for (let t = 0; t < length; t++) {
        const action = pick(5);
        const invalid = action === 4;
        const next = invalid ? s : (s + 1 + action) % S;
        const done = next === goal && rand() < 0.7;
        const failed = !done && rand() < 0.04;
        if (optional && !shape.withoutEmbeddings) {
          const dir = directions[s] as number[];
          for (let j = 0; j < d; j++) embedding[j] = (dir[j] as number) + 0.03 * (rand() - 0.5);
        }
        const step: StepInput = {
          state: stateText(s),
          action: invalid ? 'dance' : `go to room ${next}`,
          reward: invalid ? -0.1 : done ? 1 : 0,
        };
        if (optional) {
          if (rand() < 0.2) {
            step.tokenLogprobs = Array.from({ length: pick(4) }, () => -rand() * 2);
          } else step.nll = 0.05 + rand() * 1.5;
          step.value = rand();
          if (!shape.withoutEmbeddings) step.embedding = embedding.slice();
        }
        steps.push(step);
        s = next;
        if (done || failed) {
          outcome = done ? 'success' : 'failure';
          break;
        }
      }
      const last = steps[steps.length - 1] as StepInput;
      if (optional && outcome === 'truncated') {
        last.nextState = stateText(s);
        last.nextValue = rand();
      }
      // Leave the outcome out now and then: readers derive it from the return.
      sink.beginTrajectory(
        `g${g}/t${i}`,
        outcome !== 'truncated' && rand() < 0.2 ? undefined : outcome,
      );
      for (const step of steps) sink.addStep(step);
      sink.endTrajectory();
      total += steps.length;
    }
    sink.endGroup();
  }
}

/** Collects generated rollouts as a `rollout-batch/v1` document. */
export class JsonBatchSink implements RolloutSink {
  readonly batch: RolloutBatch = { format: 'rollout-batch/v1', groups: [] };
  private trajectory: RolloutTrajectory | undefined;

  beginGroup(id: string): void {
    this.batch.groups.push({ id, trajectories: [] });
  }
  beginTrajectory(id: string, outcome?: Outcome): void {
    this.trajectory = { id, steps: [], ...(outcome ? { outcome } : {}) };
    this.batch.groups.at(-1)?.trajectories.push(this.trajectory);
  }
  addStep(step: StepInput): void {
    const copy = { ...step } as RolloutStep;
    if (step.embedding) copy.embedding = Array.from(step.embedding);
    if (step.tokenLogprobs) copy.tokenLogprobs = Array.from(step.tokenLogprobs);
    this.trajectory?.steps.push(copy);
  }
  endTrajectory(): void {}
  endGroup(): void {}
}

export function syntheticBatchJson(shape: SyntheticShape, seed: number): RolloutBatch {
  const sink = new JsonBatchSink();
  generateRollouts(sink, shape, seed);
  return sink.batch;
}
