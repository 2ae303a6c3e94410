/** Where in a rollout batch a problem was found; every field is optional because
 * some problems (a wrong `format`) concern the batch as a whole. */
export interface BatchLocation {
  /** JSON path into the batch, e.g. `groups[0].trajectories[1].steps[2].reward`. */
  path?: string;
  groupId?: string;
  trajectoryId?: string;
  /** 0-based index of the step inside its trajectory. */
  stepIndex?: number;
}

export type EstimatorErrorCode =
  | 'INVALID_BATCH'
  | 'MISSING_FIELD'
  | 'UNKNOWN_METHOD'
  | 'UNKNOWN_PARAMETER'
  | 'INVALID_PARAMETER'
  /** Finite inputs whose arithmetic overflowed: a parameter or a reward far too large. */
  | 'NON_FINITE_RESULT';

/**
 * The one error type of the library: bad input of any kind (batch, method name,
 * parameters). Callers map `code` to their transport (CLI exit 2, HTTP 400,
 * GraphQL BAD_USER_INPUT); the message is complete on its own.
 */
export class EstimatorInputError extends Error {
  override readonly name = 'EstimatorInputError';

  constructor(
    readonly code: EstimatorErrorCode,
    message: string,
    readonly location?: BatchLocation,
  ) {
    super(location ? `${describeLocation(location)}: ${message}` : message);
  }
}

/** `group "g0", trajectory "g0/t1", step 2 (groups[0].trajectories[1].steps[2])` */
export function describeLocation(loc: BatchLocation): string {
  const parts: string[] = [];
  if (loc.groupId !== undefined) parts.push(`group ${JSON.stringify(loc.groupId)}`);
  if (loc.trajectoryId !== undefined) parts.push(`trajectory ${JSON.stringify(loc.trajectoryId)}`);
  if (loc.stepIndex !== undefined) parts.push(`step ${loc.stepIndex}`);
  const where = parts.join(', ');
  if (loc.path === undefined) return where || 'batch';
  return where ? `${where} (${loc.path})` : loc.path;
}
