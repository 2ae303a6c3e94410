import { Inject, Injectable } from '@nestjs/common';
import { isUuid } from '../database/uuid';
import { LRUCache } from 'lru-cache';
import { Database } from '../database/database';
import { runNotFound } from '../errors/domain-error';
import { seesProject, type Principal } from './principal';

/**
 * Confinement of run-addressed operations to the caller's project. Every entry point that takes a
 * run id (HTTP routes, root GraphQL fields, jobs) asks here first; nested fields are reached only
 * through a run that passed. A run of another project is "not found", word for word as a run that
 * does not exist.
 */
@Injectable()
export class ProjectScope {
  /** run id → project: a run never changes project, so this never goes stale. */
  private readonly projectOfRun = new LRUCache<string, string>({ max: 100_000 });

  constructor(@Inject(Database) private readonly db: Database) {}

  async projectOf(runId: string): Promise<string | undefined> {
    if (!isUuid(runId)) return undefined;
    const cached = this.projectOfRun.get(runId);
    if (cached !== undefined) return cached;
    const res = await this.db.pool.query<{ project: string }>(
      'SELECT project FROM runs WHERE id = $1',
      [runId],
    );
    const project = res.rows[0]?.project;
    if (project !== undefined) this.projectOfRun.set(runId, project);
    return project;
  }

  async canSeeRun(principal: Principal, runId: string): Promise<boolean> {
    const project = await this.projectOf(runId);
    return project !== undefined && seesProject(principal, project);
  }

  /** Throws the run-not-found error unless the caller may see the run. */
  async assertRun(principal: Principal, runId: string): Promise<void> {
    if (!(await this.canSeeRun(principal, runId))) throw runNotFound(runId);
  }
}
