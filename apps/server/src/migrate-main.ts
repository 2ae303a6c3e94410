import {
  defaultDataDir,
  ensureDatabase,
  runMigrations,
  startEmbeddedPostgres,
} from '@creditlab/db';
import pg from 'pg';
import { loadConfig } from './config/app-config';

/** `npm run db:migrate`: applies pending migrations to DATABASE_URL, or to the embedded database. */
async function main(): Promise<void> {
  const config = loadConfig();
  const embedded = config.databaseUrl
    ? undefined
    : await startEmbeddedPostgres({
        dataDir: config.embeddedPostgres.dataDir ?? defaultDataDir(),
        port: config.embeddedPostgres.port,
      });
  const url =
    config.databaseUrl ??
    (await ensureDatabase((embedded as { url: string }).url, config.embeddedPostgres.database));
  const pool = new pg.Pool({ connectionString: url });
  try {
    const result = await runMigrations(pool);
    process.stdout.write(
      `applied: ${result.applied.join(', ') || 'none'}; already applied: ${result.alreadyApplied.length}\n`,
    );
  } finally {
    await pool.end();
    await embedded?.stop();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`${(e as Error).message}\n`);
  process.exit(1);
});
