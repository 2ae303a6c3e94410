import { PrismaPg } from '@prisma/adapter-pg';
import type pg from 'pg';
import { PrismaClient } from './generated/prisma/client';

export { PrismaClient };

/** Prisma Client over an existing pg pool (no engine binary: the pg driver adapter does the I/O). */
export function createPrismaClient(pool: pg.Pool): PrismaClient {
  return new PrismaClient({ adapter: new PrismaPg(pool) });
}
