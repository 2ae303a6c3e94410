import { isUuid } from '../database/uuid';
import {
  Inject,
  Injectable,
  Logger,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { StoredIteration } from '../advantages/advantage-store';
import type { IterationSnapshot } from '../advantages/iteration-reader';
import PgBoss from 'pg-boss';
import { AppConfigToken, type AppConfig } from '../config/app-config.provider';
import { Database } from '../database/database';
import { notifyRun, RUN_CHANNEL } from '../database/notifications';
import { Metrics } from '../operations/metrics';
import { DomainError, ErrorCode } from '../errors/domain-error';
import {
  AdvantageSetsService,
  type StoredSet,
  type MethodRequest,
} from '../advantages/advantage-sets.service';
import { CHUNK_ITERATIONS, chunkIterations } from './recompute-chunks';

const QUEUE = 'recompute';

export interface RecomputeJob {
  id: string;
  setId: string;
  runId: string;
  iterations: number[];
  status: 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';
  done: number;
  error: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

interface JobRow {
  id: string;
  set_id: string;
  run_id: string;
  iterations: number[];
  status: RecomputeJob['status'];
  done: number;
  error: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

/**
 * Durable recompute jobs on pg-boss (a queue in Postgres). A job computes the
 * missing iterations of one advantage set, each stored atomically, `turnMs` of
 * work per turn before it re-queues itself, so many jobs over many runs
 * take turns. Any server process with CREDITLAB_WORKER=true takes jobs; a job
 * whose worker died is retried after it expires and resumes where it stopped,
 * since stored iterations are skipped. Cancellation is checked between iterations.
 */
@Injectable()
export class RecomputeService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('recompute');
  private boss: PgBoss | undefined;
  private readonly workerIds: string[] = [];

  constructor(
    @Inject(Database) private readonly db: Database,
    @Inject(AdvantageSetsService) private readonly sets: AdvantageSetsService,
    @Inject(AppConfigToken) private readonly config: AppConfig,
    @Inject(Metrics) private readonly metrics: Metrics,
  ) {}

  async onModuleInit(): Promise<void> {
    const c = this.config.recompute;
    this.boss = new PgBoss({
      connectionString: this.db.url,
      max: 2 + c.concurrency,
      retryLimit: 5,
      retryDelay: 1,
      expireInSeconds: c.expireSeconds,
      maintenanceIntervalSeconds: c.maintenanceSeconds,
      monitorStateIntervalSeconds: Math.max(1, c.maintenanceSeconds),
    });
    this.boss.on('error', (e: Error) => this.logger.warn(`queue: ${e.message}`));
    await this.boss.start();
    await this.boss.createQueue(QUEUE);
    const boss = this.boss;
    this.metrics.gauge(
      'creditlab_recompute_queue_depth',
      'Recompute job turns waiting in the queue',
      () => boss.getQueueSize(QUEUE),
    );
    if (c.worker) {
      for (let i = 0; i < c.concurrency; i++) {
        const workerId = await this.boss.work<{ jobId: string }>(
          QUEUE,
          { batchSize: 1, pollingIntervalSeconds: c.pollSeconds, includeMetadata: true },
          async ([job]) => {
            if (job) await this.runTurn(job.data.jobId, job.retryCount >= job.retryLimit);
          },
        );
        this.workerIds.push(workerId); // so that enqueue() can wake it rather than wait for its poll
      }
    }
  }

  async onModuleDestroy(): Promise<void> {
    // Stops fetching, waits for the current turn to finish (it ends after at most one iteration's work).
    await this.boss?.stop({ graceful: true, wait: true, timeout: 30_000 });
  }

  /** Queues the computation of `iterations` (default: every complete iteration) of a set; reuses what is stored. */
  async request(
    runId: string,
    method: MethodRequest,
    iterations?: number[],
  ): Promise<RecomputeJob> {
    const set = await this.sets.ensureSet(runId, method);
    const known = await this.sets.iterationsOf(runId);
    const wanted = iterations ?? known.complete;
    const unknown = wanted.filter((i) => !known.all.includes(i));
    if (unknown.length) {
      throw new DomainError(
        ErrorCode.InvalidInput,
        `run ${runId} has no rollouts in iteration ${unknown.join(', ')}`,
        { iterations: unknown },
      );
    }
    const id = randomUUID();
    await this.db.pool.query(
      'INSERT INTO recompute_jobs (id, set_id, run_id, iterations) VALUES ($1, $2, $3, $4)',
      [id, set.id, runId, [...new Set(wanted)].sort((a, b) => a - b)],
    );
    await this.enqueue(id);
    return (await this.get(id)) as RecomputeJob;
  }

  /** Queues a turn of a job and wakes this process's workers (they otherwise poll, every `pollSeconds`). */
  private async enqueue(jobId: string): Promise<void> {
    await this.boss?.send(QUEUE, { jobId });
    for (const id of this.workerIds) this.boss?.notifyWorker(id);
  }

  async get(id: string): Promise<RecomputeJob | null> {
    if (!isUuid(id)) return null;
    const res = await this.db.pool.query<JobRow>('SELECT * FROM recompute_jobs WHERE id = $1', [
      id,
    ]);
    return res.rows[0] ? toJob(res.rows[0]) : null;
  }

  /** A run's jobs, newest first. */
  async jobsOf(runId: string): Promise<RecomputeJob[]> {
    if (!isUuid(runId)) return [];
    const res = await this.db.pool.query<JobRow>(
      'SELECT * FROM recompute_jobs WHERE run_id = $1 ORDER BY created_at DESC, id',
      [runId],
    );
    return res.rows.map(toJob);
  }

  async cancel(id: string): Promise<RecomputeJob | null> {
    await this.db.pool.query(
      `UPDATE recompute_jobs SET status = 'cancelled', finished_at = now() WHERE id = $1 AND status IN ('queued', 'running')`,
      [id],
    );
    const job = await this.get(id);
    if (job) await notifyRun(this.db.pool, job.runId);
    return job;
  }

  /**
   * One turn of a job: missing iterations for up to `turnMs`, then a re-queue if any remain, so that
   * jobs take turns. Cancellation and progress are checked between chunks of iterations.
   */
  private async runTurn(jobId: string, lastAttempt: boolean): Promise<void> {
    const job = await this.get(jobId);
    if (!job || job.status === 'completed' || job.status === 'failed' || job.status === 'cancelled')
      return;
    const set = await this.setOf(job);
    await this.db.pool.query(
      `UPDATE recompute_jobs SET status = 'running', started_at = COALESCE(started_at, now()) WHERE id = $1 AND status = 'queued'`,
      [jobId],
    );
    await notifyRun(this.db.pool, job.runId);
    try {
      // Fresh versions are skipped; stale ones (the iteration changed since) are computed again.
      const fresh = new Set(await this.sets.freshIterations(set, job.iterations));
      const missing = job.iterations.filter((i) => !fresh.has(i));
      let done = job.iterations.length - missing.length;
      const started = Date.now();
      const texts = new Map<string, string>(); // a run's texts never change: read each once per turn
      const steps = await this.sets.stepCounts(set.runId, missing);
      const chunks = chunkIterations(missing, (i) => steps.get(i) ?? 0, {
        steps: this.config.recompute.chunkSteps,
        iterations: CHUNK_ITERATIONS,
      });
      // Read chunk i+1 and store chunk i−1 while chunk i is estimated (one store at a time, in order).
      let next = chunks[0] ? this.sets.loadMany(set, chunks[0], texts) : undefined;
      let storing: Promise<RecomputeJob['status']> | undefined;
      for (let c = 0; c < chunks.length; c++) {
        const batches = await (next as Promise<Map<number, IterationSnapshot>>);
        next = undefined;
        if (c > 0 && Date.now() - started >= this.config.recompute.turnMs) {
          await storing;
          await this.enqueue(jobId);
          return;
        }
        const following = chunks[c + 1];
        if (following) {
          next = this.sets.loadMany(set, following, texts);
          next.catch(() => undefined); // awaited on the next round, or dropped when this turn ends early
        }
        const rows = await this.sets.estimateLoaded(set, chunks[c] as number[], batches);
        if ((await storing) === 'cancelled') return;
        done += rows.length;
        storing = this.storeChunk(job, set, rows, done);
        storing.catch(() => undefined); // awaited on the next round or below
      }
      if ((await storing) === 'cancelled') return;
      await this.updateProgress(job, set);
      await this.db.pool.query(
        `UPDATE recompute_jobs SET status = 'completed', finished_at = now() WHERE id = $1 AND status = 'running'`,
        [jobId],
      );
      await notifyRun(this.db.pool, job.runId);
    } catch (e) {
      // Bad input cannot succeed on retry; other failures can, until the last attempt.
      if (e instanceof DomainError || lastAttempt) {
        await this.db.pool.query(
          `UPDATE recompute_jobs SET status = 'failed', error = $2, finished_at = now() WHERE id = $1`,
          [jobId, (e as Error).message],
        );
        await notifyRun(this.db.pool, job.runId);
        return;
      }
      throw e;
    }
  }

  /** Stores a chunk's versions, then reports the progress; the job's status after it. */
  private async storeChunk(
    job: RecomputeJob,
    set: StoredSet,
    rows: StoredIteration[],
    done: number,
  ): Promise<RecomputeJob['status']> {
    await this.sets.store(set, rows);
    return this.reportProgress(job, done);
  }

  /**
   * Progress as counted by this turn (what was fresh when it began, plus what it stored), the
   * announcement, and the job's status (has it been cancelled?) in one round trip per chunk.
   */
  private async reportProgress(job: RecomputeJob, done: number): Promise<RecomputeJob['status']> {
    const res = await this.db.pool.query<{ status: RecomputeJob['status'] }>(
      `WITH u AS (UPDATE recompute_jobs SET done = $2 WHERE run_id = $3 AND id = $1 RETURNING status)
       SELECT status, pg_notify($4, $3::text) FROM u`,
      [job.id, done, job.runId, RUN_CHANNEL],
    );
    return res.rows[0]?.status ?? 'cancelled';
  }

  /** Progress as stored: the iterations of the job with a fresh version (whoever computed them). */
  private async updateProgress(job: RecomputeJob, set: StoredSet): Promise<void> {
    const fresh = await this.sets.freshIterations(set, job.iterations);
    await this.db.pool.query('UPDATE recompute_jobs SET done = $2 WHERE id = $1', [
      job.id,
      fresh.length,
    ]);
    await notifyRun(this.db.pool, job.runId);
  }

  private async setOf(job: RecomputeJob): Promise<StoredSet> {
    const res = await this.db.pool.query<{
      method: string;
      params_key: string;
      estimator_version: string;
    }>(
      'SELECT method, params_key, estimator_version FROM advantage_sets WHERE run_id = $1 AND id = $2',
      [job.runId, job.setId],
    );
    const row = res.rows[0] as { method: string; params_key: string; estimator_version: string };
    // params_key keeps the registry's parameter order (jsonb does not).
    return {
      id: job.setId,
      runId: job.runId,
      method: row.method,
      params: JSON.parse(row.params_key) as Record<string, unknown>,
      version: row.estimator_version,
    };
  }
}

function toJob(r: JobRow): RecomputeJob {
  return {
    id: r.id,
    setId: r.set_id,
    runId: r.run_id,
    iterations: r.iterations,
    status: r.status,
    done: r.done,
    error: r.error,
    createdAt: r.created_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
  };
}
