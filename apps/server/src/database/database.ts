import { createPrismaClient, StatementCounter, type PrismaClient } from '@creditlab/db';
import { Logger } from '@nestjs/common';
import pg from 'pg';

/**
 * The server's handles on Postgres: a pg pool for the bulk write path and the
 * batched reads, Prisma Client (over the same pool) for typed reads, and a
 * statement counter. Created before Nest starts, so the embedded database and
 * migrations are ready before any module needs them.
 */
export class Database {
  readonly statements = new StatementCounter();
  readonly prisma: PrismaClient;

  constructor(
    readonly pool: pg.Pool,
    /** Connection string, for components that keep connections of their own (the job queue). */
    readonly url: string,
  ) {
    this.statements.attach(pool);
    this.prisma = createPrismaClient(pool);
  }

  static connect(url: string, max = 10): Database {
    const pool = new pg.Pool({ connectionString: url, max });
    // An idle client can lose its server (a restart, a failover): pg reports that on the pool, and an
    // unhandled 'error' event would end the process. The next query simply opens a new connection.
    pool.on('error', (e) => new Logger('database').warn(`idle connection lost: ${e.message}`));
    return new Database(pool, url);
  }

  async close(): Promise<void> {
    await this.prisma.$disconnect();
    await this.pool.end();
  }
}
