import { Inject, Injectable } from '@nestjs/common';
import {
  findUnstorable,
  allIssues,
  formatPath,
  runInputSchema,
  type ParsedRunInput,
} from '@creditlab/events';
import { EventAppender } from '../rollouts/event-appender.service';
import { knownKeysObject } from '../http/known-keys-object';
import type { RunFinishStatus } from './run.models';
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { Database } from '../database/database';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { checkProjectName, projectNotFound } from '../access/api-keys.service';
import type { Principal } from '../access/principal';

/** The run a request describes, as its `run.created` event stores it: the parsed body and the project, no id. */
type RunRecord = Omit<ParsedRunInput, 'id'> & { project: string };

/**
 * Creates runs: the row and the first event of its stream (`run.created`, seq 1), in one
 * transaction. A run goes to the caller's project; an admin key over every project chooses one
 * (`project`, default "default") and creates it if new.
 *
 * Idempotent under a client-chosen id: the same id with the same body (compared after parsing, as
 * the stored `run.created` data, by jsonb equality: key order and defaults aside) answers with the
 * existing run and writes nothing; the same id with another body is a conflict.
 */
@Injectable()
export class RunsService {
  constructor(
    @Inject(Database) private readonly db: Database,
    @Inject(EventAppender) private readonly appender: EventAppender,
  ) {}

  /**
   * Finishes a run whose trainer died without saying so: its run.finished event. A run finished
   * already with this status is left as it is; with another status it is a conflict.
   */
  async finish(runId: string, status: RunFinishStatus, summary: unknown): Promise<void> {
    if (
      summary !== null &&
      summary !== undefined &&
      (typeof summary !== 'object' || Array.isArray(summary))
    )
      throw new DomainError(ErrorCode.InvalidInput, 'summary: must be a JSON object', {
        path: 'summary',
      });
    if (await this.alreadyFinished(runId, status)) return;
    const data = { status, ...(summary === null || summary === undefined ? {} : { summary }) };
    try {
      await this.appender.appendOne(runId, { id: randomUUID(), type: 'run.finished', data });
    } catch (e) {
      // Another call finished the run between the check and the append (which re-checks under
      // the run's lock): the same outcome as finding it finished.
      if (!(e instanceof DomainError && e.code === ErrorCode.RunFinished)) throw e;
      if (!(await this.alreadyFinished(runId, status))) throw e;
    }
  }

  /** Whether the run is finished with `status` already; finished otherwise is a CONFLICT. */
  private async alreadyFinished(runId: string, status: RunFinishStatus): Promise<boolean> {
    const current = await this.db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    if (current.status === 'running') return false;
    if (current.status === status) return true;
    throw new DomainError(
      ErrorCode.Conflict,
      `run ${runId} is already ${current.status} (finished at ${current.finishedAt?.toISOString() ?? '?'})`,
      { status: current.status },
    );
  }

  async create(input: unknown, caller: Principal): Promise<{ id: string; created: boolean }> {
    const { id: requested, ...fields } = parseRunInput(input);
    const asked = fields.project;
    if (caller.project !== null && asked !== undefined && asked !== caller.project)
      throw projectNotFound(asked);
    const project = caller.project ?? asked ?? 'default';
    if (caller.project === null) checkProjectName(project, 'project');
    const run: RunRecord = { ...fields, project };
    const client = await this.db.pool.connect();
    try {
      await client.query('BEGIN');
      // A new project comes with its first run, in the same transaction (a key's own project exists).
      if (caller.project === null)
        await client.query('INSERT INTO projects (name) VALUES ($1) ON CONFLICT DO NOTHING', [
          project,
        ]);
      if (run.parentRunId) await assertParent(client, run.parentRunId, project);
      const id = await insertRun(client, run, requested);
      if (id === undefined) {
        await assertSameRun(client, requested as string, run);
        await client.query('ROLLBACK');
        return { id: requested as string, created: false };
      }
      // The stream's first event, through the appender like every other (seq 1, hashed, projected).
      await this.appender.appendWithin(client, id, {
        id: randomUUID(),
        type: 'run.created',
        data: run,
      });
      await client.query('COMMIT');
      return { id, created: true };
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      client.release();
    }
  }
}

function parseRunInput(input: unknown): ParsedRunInput {
  const unstorable = findUnstorable(input);
  if (unstorable) {
    const path = formatPath(unstorable.path);
    throw new DomainError(ErrorCode.InvalidInput, `${path || 'body'}: ${unstorable.message}`, {
      path,
      reason: unstorable.message,
      issues: [{ path, reason: unstorable.message }],
    });
  }
  const parsed = knownRunFields.safeParse(input);
  if (parsed.success) return parsed.data;
  // Every mistake at once, so that a caller fixes them in one go; path and reason name the first.
  // The body itself has the empty path, as in `path`; the message calls it "body".
  const issues = allIssues(parsed.error).map((i) => ({ path: i.path, reason: i.message }));
  const first = issues[0] as { path: string; reason: string };
  throw new DomainError(
    ErrorCode.InvalidInput,
    issues.map((i) => `${i.path || 'body'}: ${i.reason}`).join('; '),
    { path: first.path, reason: first.reason, issues },
  );
}

/**
 * The body of a new run, refusing fields it does not name: a misspelt `parentRunID` or `forkIteraton`
 * would otherwise create a run that is not the fork asked for, silently. Only requests are held to
 * this; the stored run.created events keep the schema they were written under.
 */
const knownRunFields = knownKeysObject(runInputSchema.shape, 'field');

/** A fork stays in its parent's project; a parent in another project is "not found". */
async function assertParent(client: pg.PoolClient, parentRunId: string, project: string) {
  const parent = await client.query('SELECT 1 FROM runs WHERE id = $1 AND project = $2', [
    parentRunId,
    project,
  ]);
  if (parent.rowCount === 0) {
    throw new DomainError(ErrorCode.InvalidInput, `parentRunId: run ${parentRunId} not found`, {
      path: 'parentRunId',
    });
  }
}

/**
 * The new run's row, under `id` if the client chose one; undefined when a run with that id exists
 * already (a concurrent request with the same id waits here until the first one commits or rolls back).
 */
async function insertRun(
  client: pg.PoolClient,
  run: RunRecord,
  id: string | undefined,
): Promise<string | undefined> {
  const inserted = await client.query<{ id: string }>(
    `INSERT INTO runs (id, name, project, env, method, params, config, seed, tags, parent_run_id, fork_iteration, last_seq)
     VALUES (COALESCE($1::uuid, gen_random_uuid()), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 0)
     ON CONFLICT (id) DO NOTHING RETURNING id`,
    [
      id ?? null,
      run.name,
      run.project,
      run.env,
      run.method,
      run.params,
      run.config,
      run.seed ?? null,
      run.tags,
      run.parentRunId ?? null,
      run.forkIteration ?? null,
    ],
  );
  return inserted.rows[0]?.id;
}

/**
 * A repeated creation must describe the run that exists. Its body and project are compared with
 * the stored `run.created` data; another project's run with this id answers the same as another
 * body, so the answer tells nothing about that run.
 */
async function assertSameRun(client: pg.PoolClient, id: string, run: RunRecord) {
  const stored = await client.query<{ same: boolean }>(
    `SELECT data = $2::jsonb AS same FROM events WHERE run_id = $1 AND seq = 1`,
    [id, JSON.stringify(run)],
  );
  if (!stored.rows[0]?.same) {
    throw new DomainError(
      ErrorCode.Conflict,
      `run id ${id} is taken by a run created with another body; send the same body to get that run, or choose a new id`,
      { id },
    );
  }
}
