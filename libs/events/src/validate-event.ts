import { z } from 'zod';
import {
  CLIENT_EVENT_TYPES,
  eventDataSchemas,
  runCreatedSchema,
  type ValidEvent,
} from './event-schemas';
import {
  ColumnIssue,
  columnarRolloutsSkeleton,
  parseStepColumns,
  type ColumnarRolloutsData,
} from './step-columns';
import { findUnstorable } from './storable-json';

/** Why one event is invalid: the field path inside the event and what is wrong there. */
export interface EventIssue {
  path: string;
  message: string;
}

export type EventValidation = { ok: true; event: ValidEvent } | { ok: false; issue: EventIssue };

const envelope = z.strictObject({ id: z.uuid(), type: z.string(), data: z.unknown() });

/**
 * Validates one event: what PostgreSQL could not store anywhere in it (NUL, lone surrogates,
 * deep nesting), the envelope (id must be a UUID, type known), then its data against the type's
 * schema. Reports the first problem with a dotted path such as
 * `data.groups[0].trajectories[1].steps[2].reward`.
 */
export function validateEvent(
  value: unknown,
  /** The server's own events (run.created) are accepted only from the server. */
  from: 'client' | 'server' = 'client',
): EventValidation {
  const unstorable = findUnstorable(value);
  if (unstorable)
    return { ok: false, issue: { path: formatPath(unstorable.path), message: unstorable.message } };
  const env = envelope.safeParse(value);
  if (!env.success) return { ok: false, issue: firstIssue(env.error) };
  const { type } = env.data;
  if (type === 'run.created') {
    if (from === 'client')
      return {
        ok: false,
        issue: { path: 'type', message: 'run.created is written by the server (POST /v1/runs)' },
      };
    const data = runCreatedSchema.safeParse(env.data.data);
    if (!data.success) return { ok: false, issue: firstIssue(data.error, ['data']) };
    return { ok: true, event: { id: env.data.id.toLowerCase(), type, data: data.data } };
  }
  if (!(CLIENT_EVENT_TYPES as string[]).includes(type)) {
    return {
      ok: false,
      issue: {
        path: 'type',
        message: `unknown event type "${type}"; known types: ${CLIENT_EVENT_TYPES.join(', ')}`,
      },
    };
  }
  if (type === 'rollouts.appended' && isColumnar(env.data.data))
    return validateColumnarRollouts(env.data.id.toLowerCase(), env.data.data);
  const schema = eventDataSchemas[type as keyof typeof eventDataSchemas];
  const data = schema.safeParse(env.data.data);
  if (!data.success) return { ok: false, issue: firstIssue(data.error, ['data']) };
  // UUIDs compare case-insensitively; Postgres hands them back in lower case.
  return {
    ok: true,
    event: { id: env.data.id.toLowerCase(), type, data: data.data } as ValidEvent,
  };
}

export function firstIssue(error: z.ZodError, prefix: PropertyKey[] = []): EventIssue {
  return allIssues(error, prefix)[0] as EventIssue;
}

/** Every issue of a failed parse, each with its path and a message in this library's words. */
export function allIssues(error: z.ZodError, prefix: PropertyKey[] = []): EventIssue[] {
  if (error.issues.length === 0) return [{ path: prefix.join('.'), message: 'invalid' }];
  return error.issues.map((issue) => ({
    // An unknown key's issue sits on the object that holds it: the path names the key itself.
    path: formatPath([
      ...prefix,
      ...issue.path,
      ...(issue.code === 'unrecognized_keys' ? issue.keys.slice(0, 1) : []),
    ]),
    message: describeIssue(issue),
  }));
}

/**
 * `['data', 'groups', 0, 'steps', 2, 'reward']` → `data.groups[0].steps[2].reward`. A key that is
 * not a plain name is quoted (`data.metrics["train/loss"]`, `[""]`), so that a key holding a dot or
 * a bracket cannot read as nesting, and an empty key still shows.
 */
export function formatPath(path: PropertyKey[]): string {
  return path
    .map((p, i) =>
      typeof p === 'number'
        ? `[${p}]`
        : PLAIN_NAME.test(String(p)) && String(p).length <= SHOWN_KEY_CHARACTERS
          ? `${i === 0 ? '' : '.'}${String(p)}`
          : `[${shownKey(String(p))}]`,
    )
    .join('');
}

const PLAIN_NAME = /^[A-Za-z_$][\w$]*$/;
/** A longer key (one refused for its length, say) is shown by its start, not echoed whole. */
const SHOWN_KEY_CHARACTERS = 64;

function shownKey(key: string): string {
  const characters = [...key]; // code points: no surrogate pair cut in half
  if (characters.length <= SHOWN_KEY_CHARACTERS) return JSON.stringify(key);
  const start = characters.slice(0, SHOWN_KEY_CHARACTERS).join('');
  return `${JSON.stringify(`${start}…`)} (${characters.length} characters)`;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys' && issue.message.startsWith('Unrecognized key')) {
    return issue.keys.length === 1
      ? 'unknown field'
      : `unknown fields ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}`;
  }
  if (issue.code === 'invalid_type' && issue.expected === 'number') {
    return issue.message.includes('received undefined')
      ? 'required number is missing'
      : 'must be a finite number';
  }
  if (issue.code === 'invalid_type' && issue.message.includes('received undefined')) {
    return `required ${issue.expected} is missing`;
  }
  if (issue.code === 'invalid_key') {
    // zod says only "Invalid key in record"; what is wrong with the key is in its own issue.
    const inner = issue.issues[0];
    const key = issue.path.at(-1);
    if (inner?.code === 'too_big' && typeof key === 'string')
      return `key has ${[...key].length} characters; at most ${String(inner.maximum)}`; // code points, as zod counts
    if (inner?.code === 'too_small') return 'key must not be empty';
    if (inner) return `key: ${inner.message}`;
  }
  return issue.message;
}

/** Whether a rollouts.appended event's data is in the columnar form (it has `columns`). */
function isColumnar(data: unknown): boolean {
  return typeof data === 'object' && data !== null && 'columns' in data;
}

/** The columnar rollouts.appended: the skeleton by zod, the columns as typed arrays. */
function validateColumnarRollouts(id: string, value: unknown): EventValidation {
  const skeleton = columnarRolloutsSkeleton.safeParse(value);
  if (!skeleton.success) return { ok: false, issue: firstIssue(skeleton.error, ['data']) };
  let n = 0;
  for (const g of skeleton.data.groups) for (const t of g.trajectories) n += t.stepCount;
  try {
    const columns = parseStepColumns(skeleton.data.columns, n);
    const data: ColumnarRolloutsData = { ...skeleton.data, columns };
    return { ok: true, event: { id, type: 'rollouts.appended', data } };
  } catch (e) {
    if (!(e instanceof ColumnIssue)) throw e;
    const [column, index] = e.path;
    const ofStep = column !== 'texts' && typeof index === 'number'; // texts are not per step
    const step = ofStep ? stepOfColumns(skeleton.data.groups, index) : '';
    return {
      ok: false,
      issue: { path: formatPath(['data', 'columns', ...e.path]), message: e.message + step },
    };
  }
}

/** ` (step 5 of data.groups[0].trajectories[2])`: a step of a columnar event, as a refusal names it. */
export const stepNote = (step: number, trajectoryPath: string) =>
  ` (step ${step} of ${trajectoryPath})`;

/**
 * Which trajectory's step the `index`-th entry of an event's columns is, as a note for a refusal:
 * ` (step 5 of data.groups[0].trajectories[2])`, or nothing if no trajectory holds it. A column's
 * index counts across the whole event (up to thousands of steps): the note says where the step is
 * as the row form's path would.
 */
function stepOfColumns(
  groups: readonly { trajectories: readonly { stepCount: number }[] }[],
  index: number,
): string {
  let from = 0;
  for (const [gi, g] of groups.entries())
    for (const [ti, t] of g.trajectories.entries()) {
      if (index < from + t.stepCount)
        return stepNote(index - from, `data.groups[${gi}].trajectories[${ti}]`);
      from += t.stepCount;
    }
  return '';
}
