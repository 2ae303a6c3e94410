import {
  TextTable,
  type ColumnarRolloutsData,
  type StepColumns,
  type StepPayload,
  type ValidEvent,
} from '@creditlab/events';
import { extraOf } from './event-body';

/**
 * A rollouts.appended whose steps came as objects, as the same event with its steps as columns
 * (`sentAsSteps` set), once its log body and digest are made from the objects. The preparing thread
 * hands events to the request's thread by structured clone, and the request's thread writes the
 * step slices' rows: both cost several times more per step for an object each than for a few typed
 * arrays (docs/benchmarks.md, "The server's own CPU per ingested step"), and the projector already
 * takes both forms. Other events are returned as they are.
 */
export function stepsAsColumns(event: ValidEvent): ValidEvent {
  if (event.type !== 'rollouts.appended' || 'columns' in event.data) return event;
  const { iteration, groups } = event.data;
  const data: ColumnarRolloutsData = {
    iteration,
    groups: groups.map((g) => ({
      id: g.id,
      trajectories: g.trajectories.map((t) => ({
        id: t.id,
        ...(t.outcome ? { outcome: t.outcome } : {}),
        stepCount: t.steps.length,
      })),
    })),
    columns: columnsOf(groups.flatMap((g) => g.trajectories.map((t) => t.steps))),
  };
  return { ...event, data };
}

/** The steps of every slice, end to end, as columns: an optional column only if a step has it. */
function columnsOf(slices: readonly (readonly StepPayload[])[]): StepColumns {
  let n = 0;
  for (const steps of slices) n += steps.length;
  const texts = new TextTable();
  const c = columnsSentAsSteps(n, texts);
  let i = 0;
  for (const steps of slices)
    for (const step of steps) {
      c.state[i] = texts.of(step.state);
      c.action[i] = texts.of(step.action);
      c.reward[i] = step.reward;
      if (step.nll !== undefined) (c.nll ??= nanColumn(n))[i] = step.nll;
      if (step.value !== undefined) (c.value ??= nanColumn(n))[i] = step.value;
      if (step.nextValue !== undefined) (c.nextValue ??= nanColumn(n))[i] = step.nextValue;
      if (step.nextState !== undefined)
        (c.nextState ??= new Int32Array(n).fill(-1))[i] = texts.of(step.nextState);
      if (step.tokenLogprobs !== undefined)
        (c.tokenLogprobs ??= nullColumn(n))[i] = step.tokenLogprobs;
      if (step.embedding !== undefined) (c.embedding ??= nullColumn(n))[i] = step.embedding;
      const extra = extraOf(step);
      if (extra !== null) (c.extra ??= nullColumn(n))[i] = extra;
      i++;
    }
  return c;
}

/**
 * The columns of `n` steps a client sent as objects, before they are filled: the required ones, the
 * texts numbered in `texts`. An optional column is made (nanColumn, nullColumn, or −1 for a next
 * state) once a step has its field.
 */
export function columnsSentAsSteps(n: number, texts: TextTable): StepColumns {
  return {
    n,
    texts: texts.list,
    state: new Int32Array(n),
    action: new Int32Array(n),
    reward: new Float64Array(n),
    sentAsSteps: true,
  };
}

export const nanColumn = (n: number) => new Float64Array(n).fill(NaN);
export const nullColumn = <T>(n: number) => new Array<T | null>(n).fill(null);
