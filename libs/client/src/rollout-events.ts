import { float32Base64, type ClientEvent } from '@creditlab/events';
import { newEventId } from './creditlab-client';
import { stepColumns, type RowTrajectory } from './step-columns';

export { float32Base64 };

interface BatchLike {
  groups: { id: string; trajectories: { id: string; outcome?: string; steps: object[] }[] }[];
}

/** A step with its vectors (embedding, token log-probs) in the compact wire form. */
export function compactStep<S extends object>(step: S): S {
  const s = step as S & { embedding?: unknown; tokenLogprobs?: unknown };
  const vector = (v: unknown) =>
    Array.isArray(v) || v instanceof Float32Array ? float32Base64(v as ArrayLike<number>) : v;
  if (s.embedding === undefined && s.tokenLogprobs === undefined) return step;
  return {
    ...step,
    ...(s.embedding !== undefined ? { embedding: vector(s.embedding) } : {}),
    ...(s.tokenLogprobs !== undefined ? { tokenLogprobs: vector(s.tokenLogprobs) } : {}),
  };
}

export interface RolloutEventOptions {
  /**
   * Each event's steps as columns (docs/events.md, "Columnar steps"; the default): fewer bytes, and
   * about half the server's CPU per step of the row form, one object per step, without embeddings
   * (docs/benchmarks.md, "Ingest"); fields beyond rollout-batch/v1 go in its `extra` column. An event
   * whose steps the columns cannot carry as they are (a field of another type, which the server then
   * refuses naming the step) goes in the row form. `false`: always the row form, for a server older than the columnar one.
   * Unset: columns, unless the environment has CREDITLAB_COLUMNAR_STEPS=0 (as for the Python client).
   */
  columnar?: boolean;
}

/** Whether steps go as columns when the caller does not say: yes unless CREDITLAB_COLUMNAR_STEPS=0. */
export function columnarByDefault(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.CREDITLAB_COLUMNAR_STEPS !== '0';
}

/**
 * One iteration's rollout batch (rollout-batch/v1) as `rollouts.appended`
 * events of at most `maxSteps` steps each: whole trajectories stay together
 * unless one alone is larger, in which case it continues in the next event. Steps go as columns
 * unless `options.columnar` is false; vectors in the compact form (base64 float32) either way.
 */
export function rolloutEvents(
  iteration: number,
  batch: BatchLike,
  maxSteps = 2000,
  options: RolloutEventOptions = {},
): ClientEvent[] {
  const events: ClientEvent[] = [];
  let groups: { id: string; trajectories: RowTrajectory[] }[] = [];
  let size = 0;
  const asColumns = options.columnar ?? columnarByDefault(); // the environment read once per batch
  const emit = () => {
    if (size === 0) return;
    const columnar = asColumns ? stepColumns(groups) : null;
    events.push({
      id: newEventId(),
      type: 'rollouts.appended',
      data: columnar ? { iteration, ...columnar } : { iteration, groups },
    } as ClientEvent);
    groups = [];
    size = 0;
  };
  batch.groups.forEach((group, gi) => {
    noUnknownFields(group, GROUP_FIELDS, `groups[${gi}]`);
    group.trajectories.forEach((traj, ti) =>
      noUnknownFields(traj, TRAJECTORY_FIELDS, `groups[${gi}].trajectories[${ti}]`),
    );
  });
  for (const group of batch.groups) {
    for (const traj of group.trajectories) {
      const chunks: object[][] = [];
      for (let from = 0; from < traj.steps.length; from += maxSteps)
        chunks.push(traj.steps.slice(from, from + maxSteps).map(compactStep));
      if (chunks.length === 0) chunks.push([]);
      for (const steps of chunks) {
        if (size > 0 && size + steps.length > maxSteps) emit();
        let g = groups[groups.length - 1];
        if (!g || g.id !== group.id) {
          g = { id: group.id, trajectories: [] };
          groups.push(g);
        }
        g.trajectories.push({
          id: traj.id,
          ...(traj.outcome ? { outcome: traj.outcome } : {}),
          steps,
        });
        size += Math.max(1, steps.length);
      }
    }
  }
  emit();
  return events;
}

const GROUP_FIELDS = ['id', 'trajectories'];
const TRAJECTORY_FIELDS = ['id', 'outcome', 'steps'];

/**
 * Refuses a field rollout-batch/v1 does not define on a group or trajectory, as the server does:
 * these events are built from the fields it defines, so another one would be lost, not sent.
 * (A step's other fields are its `extra`, sent as they are.)
 */
function noUnknownFields(value: object, known: string[], where: string): void {
  const unknown = Object.keys(value).find((name) => !known.includes(name));
  if (unknown !== undefined)
    throw new TypeError(`${where}.${unknown}: unknown field; known: ${known.join(', ')}`);
}
