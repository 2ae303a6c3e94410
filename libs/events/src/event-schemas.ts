import { z } from 'zod';

/**
 * The events a run's stream holds (docs/architecture.md, "Event model"), as
 * zod schemas: the single definition of what the server accepts, shared by the
 * server, the client SDK and the trainer. Step payloads follow
 * rollout-batch/v1; fields beyond it are kept as sent (`extra`).
 */
const finite = z.number(); // zod rejects NaN and ±Infinity
const iteration = z.number().int().min(0);
const key = z.string().min(1).max(512);
const outcome = z.enum(['success', 'failure', 'truncated']);

export const stepSchema = z.looseObject({
  state: z.string(),
  action: z.string(),
  reward: finite,
  nll: finite.optional(),
  tokenLogprobs: z.array(finite).optional(),
  embedding: z.array(finite).min(1).optional(),
  value: finite.optional(),
  nextState: z.string().optional(),
  nextValue: finite.optional(),
});
export type StepPayload = z.infer<typeof stepSchema>;

export const trajectorySchema = z.object({
  id: key,
  outcome: outcome.optional(),
  steps: z.array(stepSchema),
});

export const groupSchema = z.object({ id: key, trajectories: z.array(trajectorySchema) });

export const eventDataSchemas = {
  'rollouts.appended': z.object({ iteration, groups: z.array(groupSchema) }),
  'steps.appended': z.object({
    iteration,
    groupId: key,
    trajectoryId: key,
    firstStepIndex: z.number().int().min(0),
    steps: z.array(stepSchema).min(1),
  }),
  'trajectory.finished': z.object({ iteration, groupId: key, trajectoryId: key, outcome }),
  'advantages.used': z.object({
    iteration,
    method: z.string().min(1),
    params: z.record(z.string(), z.unknown()),
    advantageSetId: z.string().optional(),
  }),
  'metrics.logged': z.object({ iteration, metrics: z.record(z.string().min(1), finite) }),
  'evaluation.logged': z.object({
    iteration,
    successRate: z.number().min(0).max(1),
    tasks: z.array(z.looseObject({ task: z.string(), success: z.boolean() })).optional(),
  }),
  'checkpoint.saved': z.object({
    iteration,
    uri: z.string().min(1),
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .optional(),
    bytes: z.number().int().min(0).optional(),
    format: z.string().optional(),
  }),
  'run.finished': z.object({
    status: z.enum(['completed', 'failed', 'aborted']),
    summary: z.record(z.string(), z.unknown()).optional(),
  }),
} as const;

export type ClientEventType = keyof typeof eventDataSchemas;
/** `run.created` is written by the server when a run is created, never sent by clients. */
export type EventType = ClientEventType | 'run.created';
export const CLIENT_EVENT_TYPES = Object.keys(eventDataSchemas) as ClientEventType[];
export const EVENT_TYPES: EventType[] = ['run.created', ...CLIENT_EVENT_TYPES];

export type EventData<T extends ClientEventType> = z.infer<(typeof eventDataSchemas)[T]>;

/** One event as a client sends it (a line of NDJSON, or an item of `appendEvents`). */
export type ClientEvent = {
  [T in ClientEventType]: { id: string; type: T; data: EventData<T> };
}[ClientEventType];

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
  forkIteration: z.number().int().min(0).optional(),
});
export type RunInput = z.input<typeof runInputSchema>;
export type ParsedRunInput = z.output<typeof runInputSchema>;
