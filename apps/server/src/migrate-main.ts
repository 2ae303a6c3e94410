import { runMigrations } from '@creditlab/db';
import { Logger } from '@nestjs/common';
import pg from 'pg';
import { loadConfig, type AppConfig } from './config/app-config';
import { startDatabase } from './database/start-database';
import { startupFailure } from './startup-failure';

let config: AppConfig | undefined;

/** `npm run db:migrate`: applies pending migrations to DATABASE_URL, or to the embedded database. */
async function main(): Promise<void> {
  config = loadConfig();
  // The embedded database's own lines only at LOG_LEVEL=debug, as for the server.
  Logger.overrideLogger(
    config.logLevel === 'debug' ? ['error', 'warn', 'log', 'debug'] : ['error', 'warn', 'log'],
  );
  // The same database the server would use: the same data directory (moved from an old default
  // first, if it has to be), and an EmbeddedPostgresError if it cannot start.
  const database = await startDatabase(config);
  const pool = new pg.Pool({ connectionString: database.url });
  pool.on('error', () => undefined); // an idle connection lost: the next query says so
  try {
    const result = await runMigrations(pool);
    process.stdout.write(
      `applied: ${result.applied.join(', ') || 'none'}; already applied: ${result.alreadyApplied.length}\n`,
    );
  } finally {
    await pool.end();
    await database.embedded?.stop();
  }
}

main().catch((e: unknown) => {
  const { message, status } = startupFailure(e, config);
  process.stderr.write(`${message}\n`);
  process.exit(status);
});
