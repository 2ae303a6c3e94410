import { Inject, Injectable } from '@nestjs/common';
import { eventBodyHash, firstIssue, runInputSchema } from '@creditlab/events';
import { randomUUID } from 'node:crypto';
import { Database } from '../database/database';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { checkProjectName, projectNotFound } from '../access/api-keys.service';
import type { Principal } from '../access/principal';

/**
 * Creates runs: the row and the first event of its stream (`run.created`, seq 1), in one
 * transaction. A run goes to the caller's project; an admin key over every project chooses one
 * (`project`, default "default") and creates it if new.
 */
@Injectable()
export class RunsService {
  constructor(@Inject(Database) private readonly db: Database) {}

  async create(input: unknown, caller: Principal): Promise<{ id: string }> {
    const parsed = runInputSchema.safeParse(input);
    if (!parsed.success) {
      const issue = firstIssue(parsed.error);
      throw new DomainError(ErrorCode.InvalidInput, `${issue.path || 'body'}: ${issue.message}`, {
        path: issue.path,
        reason: issue.message,
      });
    }
    const asked = parsed.data.project;
    if (caller.project !== null && asked !== undefined && asked !== caller.project)
      throw projectNotFound(asked);
    const project = caller.project ?? asked ?? 'default';
    if (caller.project === null) checkProjectName(project, 'project');
    const run = { ...parsed.data, project };
    const client = await this.db.pool.connect();
    try {
      await client.query('BEGIN');
      // A new project comes with its first run, in the same transaction (a key's own project exists).
      if (caller.project === null)
        await client.query('INSERT INTO projects (name) VALUES ($1) ON CONFLICT DO NOTHING', [
          project,
        ]);
      if (run.parentRunId) {
        // A fork stays in its parent's project; a parent in another project is "not found".
        const parent = await client.query('SELECT 1 FROM runs WHERE id = $1 AND project = $2', [
          run.parentRunId,
          project,
        ]);
        if (parent.rowCount === 0) {
          throw new DomainError(
            ErrorCode.InvalidInput,
            `parentRunId: run ${run.parentRunId} not found`,
            { path: 'parentRunId' },
          );
        }
      }
      const inserted = await client.query<{ id: string }>(
        `INSERT INTO runs (name, project, env, method, params, config, seed, tags, parent_run_id, fork_iteration, last_seq)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 1) RETURNING id`,
        [
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
      const id = (inserted.rows[0] as { id: string }).id;
      await client.query(
        `INSERT INTO events (run_id, seq, id, type, data, body_hash) VALUES ($1, 1, $2, 'run.created', $3, $4)`,
        [id, randomUUID(), JSON.stringify(run), eventBodyHash('run.created', run)],
      );
      await client.query('COMMIT');
      return { id };
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      client.release();
    }
  }
}
