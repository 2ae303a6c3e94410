import type { EventType as StoredEventType } from '@creditlab/events';
import { registerEnumType } from '@nestjs/graphql';

/**
 * The API's enums. GraphQL shows their names (RUNNING, ROLLOUTS_APPENDED, …); the server works
 * with the values, which are the words the event log and the database use ('running',
 * 'rollouts.appended', …).
 */
export const RunStatus = {
  RUNNING: 'running',
  COMPLETED: 'completed',
  FAILED: 'failed',
  ABORTED: 'aborted',
} as const;
export type RunStatus = (typeof RunStatus)[keyof typeof RunStatus];
registerEnumType(RunStatus, { name: 'RunStatus', description: 'Where a run stands.' });

/** How a run ended (run.finished). */
export const RunFinishStatus = {
  COMPLETED: 'completed',
  FAILED: 'failed',
  ABORTED: 'aborted',
} as const;
export type RunFinishStatus = (typeof RunFinishStatus)[keyof typeof RunFinishStatus];
registerEnumType(RunFinishStatus, {
  name: 'RunFinishStatus',
  description: 'How a run ended, as its run.finished event says.',
});

export const TrajectoryOutcome = {
  SUCCESS: 'success',
  FAILURE: 'failure',
  TRUNCATED: 'truncated',
} as const;
export type TrajectoryOutcome = (typeof TrajectoryOutcome)[keyof typeof TrajectoryOutcome];
registerEnumType(TrajectoryOutcome, {
  name: 'TrajectoryOutcome',
  description: 'How a trajectory ended: as sent, else SUCCESS iff its return is > 0.',
});

export const JobStatus = {
  QUEUED: 'queued',
  RUNNING: 'running',
  COMPLETED: 'completed',
  FAILED: 'failed',
  CANCELLED: 'cancelled',
} as const;
export type JobStatus = (typeof JobStatus)[keyof typeof JobStatus];
registerEnumType(JobStatus, { name: 'JobStatus' });

export const EventType = {
  RUN_CREATED: 'run.created',
  ROLLOUTS_APPENDED: 'rollouts.appended',
  STEPS_APPENDED: 'steps.appended',
  TRAJECTORY_FINISHED: 'trajectory.finished',
  ADVANTAGES_USED: 'advantages.used',
  METRICS_LOGGED: 'metrics.logged',
  EVALUATION_LOGGED: 'evaluation.logged',
  CHECKPOINT_SAVED: 'checkpoint.saved',
  RUN_FINISHED: 'run.finished',
  RUN_RESUMED: 'run.resumed',
} as const satisfies Record<string, StoredEventType>;
export type EventType = (typeof EventType)[keyof typeof EventType];
/** Fails to compile when libs/events gains an event type this enum does not name. */
const everyEventTypeNamed: Exclude<StoredEventType, EventType> extends never ? true : never = true;
void everyEventTypeNamed;
registerEnumType(EventType, {
  name: 'EventType',
  description: 'The types of events a run’s stream holds (docs/events.md).',
});

export const RunSort = {
  CREATED_DESC: 'created-desc',
  CREATED_ASC: 'created-asc',
  NAME_ASC: 'name-asc',
  LAST_ITERATION_DESC: 'last-iteration-desc',
  /** By the last value of `sortMetric`, highest first (runs without it last). */
  METRIC_DESC: 'metric-desc',
  METRIC_ASC: 'metric-asc',
} as const;
export type RunSort = (typeof RunSort)[keyof typeof RunSort];
registerEnumType(RunSort, {
  name: 'RunSort',
  description: 'Orders of the runs list.',
  valuesMap: {
    METRIC_DESC: {
      description:
        'By the last value each run logged of `sortMetric`, highest first; runs that never logged it last.',
    },
    METRIC_ASC: { description: 'The same, lowest first; runs that never logged it still last.' },
  },
});
