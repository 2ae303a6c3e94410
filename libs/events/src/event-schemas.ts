import { z } from 'zod';
import { decodeBase64, firstNonFinite, float32View } from './base64-numbers';
import type { ColumnarRolloutsData } from './step-columns';

/**
 * The events a run's stream holds (docs/events.md), as
 * zod schemas: the single definition of what the server accepts, shared by the
 * server, the client SDK and the trainer. Step payloads follow
 * rollout-batch/v1; fields beyond it are kept as sent (`extra`). Every other object is strict: a
 * field it does not define is refused, since stripped it would be lost without a word.
 */
const finite = z.number(); // zod rejects NaN and ±Infinity
/** Integers are stored as PostgreSQL `integer`: 0 ≤ n < 2^31. */
export const MAX_INT32 = 2 ** 31 - 1;
const iteration = z.number().int().min(0).max(MAX_INT32);
/** The largest finite float32 (vectors are stored as float32). */
const FLOAT32_MAX = 3.4028234663852886e38;
/**
 * Ids of groups and trajectories, and metric names: 1 to 512 characters, so that any of them (at most
 * 2 kB in UTF-8) fits in a PostgreSQL index entry (2.7 kB at most; `run_metrics` is keyed by name).
 */
const key = z.string().min(1).max(512);
const outcome = z.enum(['success', 'failure', 'truncated']);

/**
 * A vector of numbers (an embedding, token log-probs), stored as float32: a JSON array of finite
 * numbers, or — 3 to 5 times smaller on the wire — a base64 string of little-endian float32
 * values. Either way it comes out as a Float32Array, checked finite.
 */
export const float32Vector = z
  .preprocess((v, ctx) => {
    if (typeof v !== 'string') return v;
    const bytes = decodeBase64(v);
    if (!bytes || bytes.length % 4 !== 0) {
      ctx.addIssue({
        code: 'custom',
        input: v,
        message:
          'must be an array of numbers, or base64 of little-endian float32 (a multiple of 4 bytes)',
      });
      return z.NEVER;
    }
    const values = float32View(bytes);
    const bad = firstNonFinite(values);
    if (bad >= 0) {
      ctx.addIssue({ code: 'custom', input: v, message: `value ${bad} is not a finite number` });
      return z.NEVER;
    }
    return values;
  }, z.unknown())
  .transform((v, ctx) => {
    if (v instanceof Float32Array) return v;
    if (!Array.isArray(v)) {
      ctx.addIssue({
        code: 'custom',
        input: v,
        message: 'must be an array of numbers, or base64 of little-endian float32',
      });
      return z.NEVER;
    }
    const bad = v.findIndex((x) => typeof x !== 'number' || !Number.isFinite(x));
    if (bad >= 0) {
      ctx.addIssue({ code: 'custom', input: v, path: [bad], message: 'must be a finite number' });
      return z.NEVER;
    }
    // Stored as float32: a finite number beyond its range would be stored as ±Infinity.
    const values = Float32Array.from(v as number[]);
    const over = firstNonFinite(values);
    if (over >= 0) {
      ctx.addIssue({
        code: 'custom',
        input: v,
        path: [over],
        message: `must be within float32's range (magnitude at most ${FLOAT32_MAX.toPrecision(8)}), got ${String(v[over])}`,
      });
      return z.NEVER;
    }
    return values;
  });

export const stepSchema = z.looseObject({
  state: z.string(),
  action: z.string(),
  reward: finite,
  nll: finite.optional(),
  tokenLogprobs: float32Vector.optional(),
  embedding: float32Vector
    .refine((v) => v.length > 0, 'must have at least one dimension')
    .optional(),
  value: finite.optional(),
  nextState: z.string().optional(),
  nextValue: finite.optional(),
});
/** The fields rollout-batch/v1 defines for a step; any other field is kept as sent (`extra`). */
export const STEP_FIELDS: ReadonlySet<string> = new Set(Object.keys(stepSchema.shape));

/**
 * A step's fields beyond rollout-batch/v1, or undefined when it has none. For per-step loops
 * elsewhere: compiled to CommonJS, each use there of an imported name is a call of the exporting
 * modules' getters (through the package's index, two), which doubled the time of such a loop over
 * a step's fields with STEP_FIELDS imported rather than in hand.
 */
export function fieldsBeyondV1(step: object): string[] | undefined {
  let extra: string[] | undefined;
  for (const key of Object.keys(step)) if (!STEP_FIELDS.has(key)) (extra ??= []).push(key);
  return extra;
}

/** A step as validated (vectors as Float32Array). */
export type StepPayload = z.output<typeof stepSchema>;

export const trajectorySchema = z.strictObject({
  id: key,
  outcome: outcome.optional(),
  steps: z.array(stepSchema),
});

export const groupSchema = z.strictObject({ id: key, trajectories: z.array(trajectorySchema) });

export const eventDataSchemas = {
  'rollouts.appended': z.strictObject({ iteration, groups: z.array(groupSchema) }),
  'steps.appended': z.strictObject({
    iteration,
    groupId: key,
    trajectoryId: key,
    firstStepIndex: z.number().int().min(0).max(MAX_INT32),
    steps: z.array(stepSchema).min(1),
  }),
  'trajectory.finished': z.strictObject({ iteration, groupId: key, trajectoryId: key, outcome }),
  'advantages.used': z.strictObject({
    iteration,
    method: z.string().min(1),
    params: z.record(z.string(), z.unknown()),
    advantageSetId: z.string().optional(),
    /** The log position of the iteration the advantages were computed from: the version consumed. */
    inputsSeq: z.number().int().min(1).optional(),
  }),
  'metrics.logged': z.strictObject({ iteration, metrics: z.record(key, finite) }),
  'evaluation.logged': z.strictObject({
    iteration,
    successRate: z.number().min(0).max(1),
    tasks: z.array(z.looseObject({ task: z.string(), success: z.boolean() })).optional(),
  }),
  'checkpoint.saved': z.strictObject({
    iteration,
    uri: z.string().min(1),
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .optional(),
    bytes: z.number().int().min(0).optional(),
    format: z.string().optional(),
  }),
  'run.finished': z.strictObject({
    status: z.enum(['completed', 'failed', 'aborted']),
    summary: z.record(z.string(), z.unknown()).optional(),
  }),
  /** Reopens a finished run (as W&B's resume does): events are refused after run.finished until this one. */
  'run.resumed': z.strictObject({ reason: z.string().max(1000).optional() }),
} as const;

export type ClientEventType = keyof typeof eventDataSchemas;
/** `run.created` is written by the server when a run is created (POST /v1/runs), never sent by clients. */
export type EventType = ClientEventType | 'run.created';
export const CLIENT_EVENT_TYPES = Object.keys(eventDataSchemas) as ClientEventType[];
export const EVENT_TYPES: EventType[] = ['run.created', ...CLIENT_EVENT_TYPES];

/** An event's data as the server holds it after validation. */
export type EventData<T extends ClientEventType> = z.output<(typeof eventDataSchemas)[T]>;

/** What `run.created` records: the run as its creator described it, in its project (its id is the stream's). */
export type RunCreatedData = z.output<typeof runCreatedSchema>;

/** One event as a client sends it (a line of NDJSON, or an item of `appendEvents`). */
export type ClientEvent = {
  [T in ClientEventType]: { id: string; type: T; data: z.input<(typeof eventDataSchemas)[T]> };
}[ClientEventType];

/**
 * One event after validation: vectors decoded, ids in lower case (run.created: written by the
 * server). `rollouts.appended` comes in two forms: steps as objects, or as columns (step-columns.ts).
 */
export type ValidEvent =
  | { [T in ClientEventType]: { id: string; type: T; data: EventData<T> } }[ClientEventType]
  | { id: string; type: 'rollouts.appended'; data: ColumnarRolloutsData }
  | { id: string; type: 'run.created'; data: RunCreatedData };

export const runInputSchema = z.object({
  /**
   * The run's id, chosen by the client (optional): creating a run again with the same id and the
   * same body answers with that run, so a retried request never makes a second one.
   */
  id: z.uuid().optional(),
  name: z.string().min(1).max(200),
  /** Omitted: the key's project ("default" for an admin key over every project). */
  project: z.string().min(1).max(100).optional(),
  env: z.string().min(1).max(100),
  method: z.string().min(1).max(100),
  params: z.record(z.string(), z.unknown()).default({}),
  config: z.record(z.string(), z.unknown()).default({}),
  seed: z.number().int().optional(),
  tags: z.array(z.string().min(1).max(100)).max(50).default([]),
  parentRunId: z.uuid().optional(),
  forkIteration: iteration.optional(),
});
export type RunInput = z.input<typeof runInputSchema>;

export const runCreatedSchema = runInputSchema.omit({ id: true }).extend({
  project: z.string().min(1).max(100),
});
export type ParsedRunInput = z.output<typeof runInputSchema>;
