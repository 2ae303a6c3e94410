import { Controller, Get, HttpCode, Inject, Res } from '@nestjs/common';
import type { Response } from 'express';
import { readdir } from 'node:fs/promises';
import { MIGRATIONS_DIR } from '@creditlab/db';
import { Database } from '../database/database';
import { Notifications } from '../database/notifications';
import { preparedStatementsOff } from '../database/repeated-statements';
import { replicaWarning } from '../database/replica-status';
import { Requires } from '../access/requires.decorator';
import type { CheckpointBucket } from '../checkpoints/checkpoint-bucket';
import { CheckpointBucketToken } from '../checkpoints/checkpoint-bucket.provider';

/**
 * Liveness and readiness for load balancers and orchestrators: /healthz says
 * the process serves HTTP; /readyz says it can do its work (the database
 * answers and every migration in the image is applied), else 503 with why.
 * Its `warnings` name what works less than it should without stopping the
 * process's work (notices of changes not arriving: live updates stand still; a
 * checkpoint bucket that cannot be used: checkpoints fail), which an orchestrator
 * should not take it out of service for.
 */
@Controller()
@Requires('public')
export class HealthController {
  constructor(
    @Inject(Database) private readonly db: Database,
    @Inject(Notifications) private readonly notifications: Notifications,
    /** The checkpoint bucket, when one is set: a warning while it cannot be used. */
    @Inject(CheckpointBucketToken) private readonly bucket: CheckpointBucket | undefined,
  ) {}

  @Get('healthz')
  @HttpCode(200)
  health(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('readyz')
  async ready(
    @Res({ passthrough: true }) res: Response,
  ): Promise<{ status: string; checks: Record<string, string>; warnings: Record<string, string> }> {
    const checks: Record<string, string> = {};
    const down = this.db.knownDown();
    if (down) checks.database = `unreachable: ${down}`;
    else
      try {
        // One statement answers both questions: a database that answers it is reachable, and any
        // failure (the connection lost between two statements, too) means it is not.
        const applied = new Set(
          (await this.db.pool.query<{ name: string }>('SELECT name FROM _migrations')).rows.map(
            (r) => r.name,
          ),
        );
        checks.database = 'ok';
        const pending = (await readdir(MIGRATIONS_DIR)).sort().filter((m) => !applied.has(m));
        checks.migrations = pending.length ? `pending: ${pending.join(', ')}` : 'ok';
      } catch (e) {
        checks.database = `unreachable: ${(e as Error).message}`;
      }
    const ok = Object.values(checks).every((c) => c === 'ok') && checks.migrations !== undefined;
    res.status(ok ? 200 : 503);
    const warnings: Record<string, string> = {};
    const notifications = this.notifications.warning();
    if (notifications) warnings.notifications = notifications;
    const preparedStatements = preparedStatementsOff(this.db.ingestPool);
    if (preparedStatements) warnings.preparedStatements = `turned off: ${preparedStatements}`;
    const replica =
      this.db.replica && checks.database === 'ok'
        ? await replicaWarning(this.db.pool, this.db.replica.pool)
        : undefined;
    if (replica) warnings.readReplica = replica;
    const bucket = this.bucket?.warning();
    if (bucket) warnings.checkpointBucket = bucket;
    return { status: ok ? 'ready' : 'not ready', checks, warnings };
  }
}
