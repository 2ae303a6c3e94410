import { Logger } from '@nestjs/common';
import pg from 'pg';
import type { AppConfig } from '../config/app-config';
import { prepareDatabase } from './prepare-database';
import { startDatabase } from './start-database';

/**
 * For the database commands (db:migrate, db:rebuild): the database the server would use (the
 * same data directory or DATABASE_URL, started the same way), brought up to date by the same
 * steps, then `work`, then everything stopped. Their lines go to stdout.
 */
export async function withCommandDatabase<T>(
  config: AppConfig,
  work: (pool: pg.Pool) => Promise<T>,
): Promise<T> {
  // The embedded database's own lines only at LOG_LEVEL=debug, as for the server.
  Logger.overrideLogger(
    config.logLevel === 'debug' ? ['error', 'warn', 'log', 'debug'] : ['error', 'warn', 'log'],
  );
  const database = await startDatabase(config);
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  pool.on('error', () => undefined); // an idle connection lost: the next query says so
  try {
    await prepareDatabase(pool, (line) => process.stdout.write(`${line}\n`));
    return await work(pool);
  } finally {
    await pool.end();
    await database.embedded?.stop();
  }
}
