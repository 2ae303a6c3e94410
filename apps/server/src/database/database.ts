import { createPrismaClient, StatementCounter, type PrismaClient } from '@creditlab/db';
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

  constructor(readonly pool: pg.Pool) {
    this.statements.attach(pool);
    this.prisma = createPrismaClient(pool);
  }

  static connect(url: string, max = 10): Database {
    return new Database(new pg.Pool({ connectionString: url, max }));
  }

  async close(): Promise<void> {
    await this.prisma.$disconnect();
    await this.pool.end();
  }
}
