import { Inject, Injectable } from '@nestjs/common';
import { seesProject, type Principal } from '../access/principal';
import { Database } from '../database/database';
import { isUuid } from '../database/uuid';
import { decodeCursor, encodeCursor, pageSize, RUN_CURSOR, toPage } from '../graphql/pagination';
import type { Run, RunConnection, RunFilter } from './run.models';

type RunRow = Awaited<ReturnType<Database['prisma']['run']['findFirst']>> & object;

/** Reading runs, always within the projects the caller sees. */
@Injectable()
export class RunQueries {
  constructor(@Inject(Database) private readonly db: Database) {}

  /** Runs newest first, filtered, a page after `after` (first ≤ 100). */
  async list(
    caller: Principal,
    filter: RunFilter | undefined,
    first: number | undefined,
    after: string | undefined,
  ): Promise<RunConnection> {
    const limit = pageSize(first, 20, 100, 'runs');
    // A key confined to a project filtering on another one sees nothing, as if that project were empty.
    if (filter?.project && !seesProject(caller, filter.project))
      return { nodes: [], pageInfo: { hasNextPage: false, endCursor: null } };
    const where: Record<string, unknown> = {
      project: caller.project ?? filter?.project,
      env: filter?.env,
      method: filter?.method,
      status: filter?.status,
      ...(filter?.tags?.length ? { tags: { hasEvery: filter.tags } } : {}),
    };
    if (after) {
      const [createdAt, id] = decodeCursor(after, 'runs', RUN_CURSOR);
      where.OR = [
        { createdAt: { lt: new Date(createdAt) } },
        { createdAt: new Date(createdAt), id: { lt: id } },
      ];
    }
    const rows = await this.db.prisma.run.findMany({
      where,
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: limit + 1,
    });
    const page = toPage(rows, limit, (r) => encodeCursor([r.createdAt.toISOString(), r.id]));
    return { ...page, nodes: page.nodes.map(toRun) };
  }

  /** A run the caller sees, or null (absent and another project's look the same). */
  async get(caller: Principal, id: string): Promise<Run | null> {
    if (!isUuid(id)) return null;
    const row = await this.db.prisma.run.findUnique({ where: { id } });
    return row && seesProject(caller, row.project) ? toRun(row) : null;
  }
}

function toRun(r: RunRow): Run {
  return {
    id: r.id,
    name: r.name,
    project: r.project,
    env: r.env,
    method: r.method,
    params: r.params,
    config: r.config,
    seed: r.seed === null ? null : Number(r.seed),
    tags: r.tags,
    status: r.status,
    lastSeq: Number(r.lastSeq),
    lastIteration: r.lastIteration,
    parentRunId: r.parentRunId,
    forkIteration: r.forkIteration,
    createdAt: r.createdAt,
    finishedAt: r.finishedAt,
    summary: r.summary,
  };
}
