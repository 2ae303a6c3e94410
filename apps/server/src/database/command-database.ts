import { Logger, type LoggerService } from '@nestjs/common';
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
  /** The command's name, which starts each of its lines: `db:migrate`. */
  command: string,
  config: AppConfig,
  work: (pool: pg.Pool) => Promise<T>,
): Promise<T> {
  // Plain lines, as the command's own; the embedded database's own only at LOG_LEVEL=debug, as
  // for the server. (Nest's default logger wrote them coloured, with its pid and a timestamp.)
  Logger.overrideLogger(commandLogger(command, config.logLevel === 'debug'));
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

/** Lines of the modules a command runs, as `db:migrate: message`: errors and warnings on stderr. */
function commandLogger(command: string, debug: boolean): LoggerService {
  const line = (to: NodeJS.WriteStream) => (message: unknown) =>
    to.write(`${command}: ${String(message)}\n`);
  return {
    log: line(process.stdout),
    warn: line(process.stderr),
    error: line(process.stderr),
    debug: debug ? line(process.stdout) : () => undefined,
    verbose: () => undefined,
  };
}
