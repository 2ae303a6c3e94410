import { FIELD_HINT, getMethod, type StepField } from '@creditlab/estimators';
import type pg from 'pg';
import { DomainError, ErrorCode } from '../errors/domain-error';

/** The 1-based place of a slice's first step without the array's element (none: NULL). */
const firstNull = (array: string) =>
  `CASE WHEN ${array} IS NULL THEN 1 ELSE array_position(${array}, NULL) END`;

/**
 * The place in a slice of its first step that lacks a field, in the reader's terms
 * (iteration-columns.ts): a NULL array is a slice none of whose steps has the field, and a step has
 * NLL if it was given or can be derived from token log-probs, so it lacks NLL where both are NULL.
 */
const FIRST_LACKING: Record<StepField, string> = {
  nll: `CASE WHEN s.nll IS NULL THEN ${firstNull('s.token_logprobs')}
             WHEN s.token_logprobs IS NULL THEN array_position(s.nll, NULL)
             WHEN array_position(s.nll, NULL) IS NULL THEN NULL
             ELSE (SELECT min(p) FROM unnest(array_positions(s.nll, NULL)) p
                   WHERE s.token_logprobs[p] IS NULL) END`,
  value: firstNull('s.value'),
  // every step of a slice whose embeddings are in its event's body has one
  embedding: `CASE WHEN s.embedding_at IS NOT NULL THEN NULL ELSE ${firstNull('s.embedding')} END`,
};

/**
 * The first step (canonical order) of these iterations that lacks `field`, with its keys: the step
 * slices alone are scanned, in their primary key's order (which is canonical order), and the group's
 * and trajectory's keys looked up for the one step found.
 */
const firstLackingSql = (field: StepField) => `
  WITH first AS (
    SELECT s.run_id, s.iteration, s.group_ord, s.traj_ord, s.first_idx + x.at - 1 AS step_index
    FROM step_slices s CROSS JOIN LATERAL (SELECT ${FIRST_LACKING[field]} AS at) x
    WHERE s.run_id = $1 AND s.iteration = ANY($2::int[]) AND x.at IS NOT NULL
    ORDER BY s.iteration, s.group_ord, s.traj_ord, s.first_idx
    LIMIT 1)
  SELECT f.iteration, g.key AS group_id, t.key AS trajectory_id, f.step_index
  FROM first f
  JOIN trajectories t ON t.run_id = f.run_id AND t.iteration = f.iteration
    AND t.group_ord = f.group_ord AND t.ord = f.traj_ord
  JOIN rollout_groups g ON g.run_id = f.run_id AND g.iteration = f.iteration AND g.ord = f.group_ord`;

/**
 * Refuses methods that need a step field (gaca: NLL, ppo-gae: value, bipace: embeddings) that a step
 * of the given iterations lacks, naming the method and the step, as the advantages endpoint would
 * for that iteration. Run before a streamed answer's first byte: found later, the only way left to
 * say it would be to cut the file short.
 */
export async function refuseMissingFields(
  db: Pick<pg.ClientBase, 'query'>,
  runId: string,
  iterations: number[],
  methods: string[],
): Promise<void> {
  const checked = new Set<StepField>();
  for (const [index, name] of methods.entries()) {
    for (const field of getMethod(name).requires) {
      if (checked.has(field)) continue;
      checked.add(field);
      const res = await db.query<{
        iteration: number;
        group_id: string;
        trajectory_id: string;
        step_index: number;
      }>(firstLackingSql(field), [runId, iterations]);
      const step = res.rows[0];
      if (!step) continue;
      throw new DomainError(
        ErrorCode.InvalidInput,
        `methods[${index}]: method "${name}" needs ${FIELD_HINT[field]} on every step; iteration ${step.iteration}, group "${step.group_id}", trajectory "${step.trajectory_id}", step ${step.step_index} has none`,
        {
          path: `methods[${index}]`,
          estimatorError: 'MISSING_FIELD',
          iteration: step.iteration,
          groupId: step.group_id,
          trajectoryId: step.trajectory_id,
          stepIndex: step.step_index,
        },
      );
    }
  }
}
