import { Inject, Injectable } from '@nestjs/common';
import { firstIssue, runInputSchema } from '@creditlab/events';
import { randomUUID } from 'node:crypto';
import { Database } from '../database/database';
import { DomainError, ErrorCode } from '../errors/domain-error';

/** Creates runs: the row and the first event of its stream (`run.created`, seq 1), in one transaction. */
@Injectable()
export class RunsService {
  constructor(@Inject(Database) private readonly db: Database) {}

  async create(input: unknown): Promise<{ id: string }> {
    const parsed = runInputSchema.safeParse(input);
    if (!parsed.success) {
      const issue = firstIssue(parsed.error);
      throw new DomainError(ErrorCode.InvalidInput, `${issue.path || 'body'}: ${issue.message}`, {
        path: issue.path,
        reason: issue.message,
      });
    }
    const run = parsed.data;
    const client = await this.db.pool.connect();
    try {
      await client.query('BEGIN');
      if (run.parentRunId) {
        const parent = await client.query('SELECT 1 FROM runs WHERE id = $1', [run.parentRunId]);
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
        `INSERT INTO events (run_id, seq, id, type, data) VALUES ($1, 1, $2, 'run.created', $3)`,
        [id, randomUUID(), JSON.stringify(run)],
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
