import {
  createPrismaClient,
  StatementCounter,
  type PrismaClient,
  type RunningPostgres,
} from '@creditlab/db';
import { Logger } from '@nestjs/common';
import pg from 'pg';
import { openPool } from './pools';
import { prepareRepeatedStatements } from './repeated-statements';

/** How long a connection to the read replica may take to open. */
const REPLICA_CONNECT_MS = 5000;

/** Where a read goes: a pool and Prisma Client over it. */
export interface Reader {
  pool: pg.Pool;
  prisma: PrismaClient;
}

/** The kinds of GraphQL operation, which decide where their reads go (`Database.readerFor`). */
export type OperationKind = 'query' | 'mutation' | 'subscription';

/**
 * The server's handles on Postgres: a pg pool for the bulk write path and the
 * batched reads, Prisma Client (over the same pool) for typed reads, and a
 * statement counter. Created before Nest starts, so the embedded database and
 * migrations are ready before any module needs them.
 */
export class Database {
  readonly statements = new StatementCounter();
  readonly prisma: PrismaClient;
  /**
   * A read replica (CREDITLAB_READ_REPLICA_URL), when the lab runs one: GraphQL queries read the
   * runs and their rollouts there (readerFor), so that dashboards and analyses do not load the
   * primary that ingest writes to.
   */
  readonly replica: Reader | undefined;

  constructor(
    readonly pool: pg.Pool,
    /** Connection string, for components that keep connections of their own (the job queue). */
    readonly url: string,
    /**
     * Connections for ingest transactions only: a request holds one while its body streams in,
     * so slow or many uploads can use up these, never the connections reads and the online path
     * use.
     */
    readonly ingestPool: pg.Pool = pool,
    /**
     * The embedded PostgreSQL under these pools, when this server started one: between its
     * postmaster's death and its restart, a backend the dead postmaster left behind can still
     * answer a query for a moment, so the pools alone cannot tell that the database is down.
     */
    private readonly embedded?: Pick<RunningPostgres, 'pid'>,
    replica?: pg.Pool,
  ) {
    this.statements.attach(pool);
    if (ingestPool !== pool) this.statements.attach(ingestPool);
    this.prisma = createPrismaClient(pool);
    if (replica) this.statements.attach(replica);
    this.replica = replica && { pool: replica, prisma: createPrismaClient(replica) };
  }

  /**
   * Where an operation's reads go: a query's to the replica if there is one, since it only reads
   * (the advantages a query computes and stores are not read through this: they stay on the
   * primary); a mutation's and a subscription's to the primary, which a mutation has just written
   * and whose notices a subscription answers, so that neither shows what it was told of as missing.
   */
  readerFor(kind: OperationKind): Reader {
    return kind === 'query' && this.replica ? this.replica : this;
  }

  static connect(
    url: string,
    sizes = {
      connections: 10,
      ingestConnections: 8,
      statementTimeoutMs: 0,
      preparedStatements: true,
    },
    embedded?: Pick<RunningPostgres, 'pid'>,
    /** A hot standby of the database at `url`, for queries' reads, and its pool's size. */
    replica?: { url: string; connections: number },
  ): Database {
    const logger = new Logger('database');
    const log = { warn: (m: string) => logger.warn(m), debug: (m: string) => logger.debug(m) };
    // A lost connection of the replica's pool says which database it was to.
    const replicaLog = {
      warn: (m: string) => logger.warn(`read replica: ${m}`),
      debug: (m: string) => logger.debug(`read replica: ${m}`),
    };
    const open = (max: number, statementTimeoutMs = 0) =>
      openPool(url, max, statementTimeoutMs, log);
    // Ingest transactions stream their requests' bodies and are bounded by the body's own limits.
    const ingest = open(sizes.ingestConnections);
    // Off for a pooler that does not keep a connection's named statements (docs/scaling.md).
    if (sizes.preparedStatements)
      prepareRepeatedStatements(ingest, { onNotKept: (m) => logger.warn(m) });
    return new Database(
      open(sizes.connections, sizes.statementTimeoutMs),
      url,
      ingest,
      embedded,
      // A replica that does not answer fails its queries (and /readyz's look at it) in seconds,
      // rather than when the OS gives up on the connection (minutes, for a host that is gone).
      replica &&
        openPool(
          replica.url,
          replica.connections,
          sizes.statementTimeoutMs,
          replicaLog,
          REPLICA_CONNECT_MS,
        ),
    );
  }

  /** Why the database cannot be used now, when the server knows without asking it. */
  knownDown(): string | undefined {
    if (this.embedded && this.embedded.pid() === undefined)
      return 'the embedded PostgreSQL is not running; the server is restarting it';
    return undefined;
  }

  async close(): Promise<void> {
    const replica = this.replica && closeReader(this.replica);
    await this.prisma.$disconnect();
    await this.pool.end();
    if (this.ingestPool !== this.pool) await this.ingestPool.end();
    await replica;
  }
}

async function closeReader(reader: Reader): Promise<void> {
  await reader.prisma.$disconnect();
  await reader.pool.end();
}
