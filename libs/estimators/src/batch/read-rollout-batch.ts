import { EstimatorInputError, type BatchLocation } from '../errors';
import { ColumnarBatchBuilder, type StepInput } from './columnar-batch-builder';
import type { ColumnarBatch } from './columnar-batch';
import { ROLLOUT_BATCH_FORMAT, type Outcome } from './rollout-batch';

const OUTCOMES: readonly string[] = ['success', 'failure', 'truncated'];

/**
 * Validates a parsed `rollout-batch/v1` document and builds its columnar form in
 * one pass. Shape checks (types, required fields) happen here; value checks
 * (finite numbers, unique ids, embedding dimension) in the builder, so every
 * producer gets them. Unknown fields are ignored so that producers can attach
 * extras (e.g. an environment's true advantage) without breaking readers.
 *
 * Written by hand rather than with a schema library because it runs once per
 * step on batches of a million steps and must name group, trajectory and step.
 */
export function columnarBatchFromJson(doc: unknown): ColumnarBatch {
  const root = asObject(doc, { path: '(root)' }, 'the batch');
  if (root.format !== ROLLOUT_BATCH_FORMAT) {
    bad(
      `"format" must be "${ROLLOUT_BATCH_FORMAT}", got ${JSON.stringify(root.format) ?? 'nothing'}`,
      {
        path: 'format',
      },
    );
  }
  const groups = asArray(root.groups, { path: 'groups' });
  const builder = new ColumnarBatchBuilder(estimateStepCount(groups));
  groups.forEach((g, gi) => {
    const gPath = `groups[${gi}]`;
    const group = asObject(g, { path: gPath }, 'a group');
    const groupId = asString(group.id, { path: `${gPath}.id` });
    builder.beginGroup(groupId);
    const trajectories = asArray(group.trajectories, { path: `${gPath}.trajectories`, groupId });
    trajectories.forEach((t, ti) => {
      const tPath = `${gPath}.trajectories[${ti}]`;
      const traj = asObject(t, { path: tPath, groupId }, 'a trajectory');
      const trajectoryId = asString(traj.id, { path: `${tPath}.id`, groupId });
      const loc = { groupId, trajectoryId };
      builder.beginTrajectory(
        trajectoryId,
        readOutcome(traj.outcome, { ...loc, path: `${tPath}.outcome` }),
      );
      asArray(traj.steps, { ...loc, path: `${tPath}.steps` }).forEach((s, si) => {
        builder.addStep(readStep(s, { ...loc, stepIndex: si, path: `${tPath}.steps[${si}]` }));
      });
      builder.endTrajectory();
    });
    builder.endGroup();
  });
  return builder.build();
}

/** Parses JSON text, reporting a syntax error as bad input rather than a crash. */
export function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new EstimatorInputError(
      'INVALID_BATCH',
      `input is not valid JSON: ${(e as Error).message}`,
    );
  }
}

function readStep(s: unknown, loc: BatchLocation): StepInput {
  const step = asObject(s, loc, 'a step');
  const at = (field: string): BatchLocation => ({ ...loc, path: `${loc.path}.${field}` });
  return {
    state: asString(step.state, at('state')),
    action: asString(step.action, at('action')),
    reward: asNumber(step.reward, at('reward')),
    nll: optional(step, 'nll', asNumber, at),
    tokenLogprobs: optional(step, 'tokenLogprobs', asNumberArray, at),
    embedding: optional(step, 'embedding', asNumberArray, at),
    value: optional(step, 'value', asNumber, at),
    nextState: optional(step, 'nextState', asString, at),
    nextValue: optional(step, 'nextValue', asNumber, at),
  };
}

function optional<T>(
  obj: Record<string, unknown>,
  field: string,
  read: (x: unknown, loc: BatchLocation) => T,
  at: (field: string) => BatchLocation,
): T | undefined {
  const x = obj[field];
  if (x === undefined) return undefined;
  if (x === null) bad(`"${field}" is null; leave an optional field out instead`, at(field));
  return read(x, at(field));
}

function readOutcome(x: unknown, loc: BatchLocation): Outcome | undefined {
  if (x === undefined) return undefined;
  if (typeof x !== 'string' || !OUTCOMES.includes(x)) {
    bad(
      `"outcome" must be one of ${OUTCOMES.map((o) => `"${o}"`).join(', ')}, got ${JSON.stringify(x)}`,
      loc,
    );
  }
  return x as Outcome;
}

function asObject(x: unknown, loc: BatchLocation, what: string): Record<string, unknown> {
  if (typeof x !== 'object' || x === null || Array.isArray(x))
    bad(`${what} must be a JSON object`, loc);
  return x as Record<string, unknown>;
}

function asArray(x: unknown, loc: BatchLocation): unknown[] {
  if (!Array.isArray(x))
    bad(`"${fieldName(loc)}" must be an array${x === undefined ? ' (missing)' : ''}`, loc);
  return x;
}

function asString(x: unknown, loc: BatchLocation): string {
  if (typeof x !== 'string')
    bad(`"${fieldName(loc)}" must be a string${x === undefined ? ' (missing)' : ''}`, loc);
  return x;
}

function asNumber(x: unknown, loc: BatchLocation): number {
  if (typeof x !== 'number')
    bad(`"${fieldName(loc)}" must be a number${x === undefined ? ' (missing)' : ''}`, loc);
  return x; // finiteness is the builder's check
}

function asNumberArray(x: unknown, loc: BatchLocation): number[] {
  if (!Array.isArray(x)) bad(`"${fieldName(loc)}" must be an array of numbers`, loc);
  return x as number[]; // element types and finiteness are the builder's check
}

function fieldName(loc: BatchLocation): string {
  const path = loc.path ?? '';
  return path.slice(path.lastIndexOf('.') + 1);
}

function estimateStepCount(groups: unknown[]): number {
  const first = groups[0] as { trajectories?: { steps?: unknown[] }[] } | undefined;
  const perTrajectory = first?.trajectories?.[0]?.steps?.length ?? 16;
  const perGroup = first?.trajectories?.length ?? 8;
  return groups.length * perGroup * perTrajectory;
}

function bad(message: string, loc: BatchLocation): never {
  throw new EstimatorInputError('INVALID_BATCH', message, loc);
}
