import {
  helpText,
  parseCommandLine,
  reportUsageError,
  UsageError,
  type Command,
} from '@creditlab/client';
import { defaultDataDir, ensureDatabase, startEmbeddedPostgres } from '@creditlab/db';
import pg from 'pg';
import { ConfigError, loadConfig } from './config/app-config';
import { prepareDatabase } from './database/prepare-database';
import { isUuid } from './database/uuid';
import { rebuildRun } from './ingest/projection-rebuild';

const REBUILD_COMMAND = {
  invocation: 'npm run db:rebuild --',
  name: 'db:rebuild',
  synopsis: ['[--run RUN_ID] [--help]'],
  summary:
    'Drops the projections (texts, task groups, trajectories, steps, iterations, the runs’ summaries) and builds them again from the event log, each run in one transaction, by the same code that maintains them at ingest. Stored advantages stay: each carries the log position it was computed from, which a rebuild reproduces. Run it with the server stopped; it finds the database as the server does (DATABASE_URL, else the embedded PostgreSQL).',
  flags: {
    run: {
      type: 'string',
      value: 'RUN_ID',
      help: 'rebuild this run only',
      byDefault: 'every run',
    },
  },
  examples: ['npm run db:rebuild', 'npm run db:rebuild -- --run 0b6f1c2e-…'],
  notes: 'exit status: 0 done, 1 the database or a run failed, 2 bad usage or configuration',
} satisfies Command<{ run: { type: 'string'; value: string; help: string; byDefault: string } }>;

/** `npm run db:rebuild [-- --run ID]`: projections rebuilt from the event log. */
async function main(argv: string[]): Promise<number> {
  let only: string | undefined;
  try {
    const line = parseCommandLine(REBUILD_COMMAND, argv);
    if (line.help) {
      process.stdout.write(helpText(REBUILD_COMMAND));
      return 0;
    }
    only = line.values.run;
    if (only !== undefined && !isUuid(only)) throw new UsageError(`--run: not a run id: ${only}`);
  } catch (e) {
    if (e instanceof UsageError) return reportUsageError('db:rebuild', e);
    throw e;
  }
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
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  try {
    await prepareDatabase(pool, (line) => process.stdout.write(`${line}\n`));
    const ids = only
      ? [only]
      : (await pool.query<{ id: string }>('SELECT id FROM runs ORDER BY created_at, id')).rows.map(
          (r) => r.id,
        );
    for (const id of ids) {
      const r = await rebuildRun(pool, id);
      process.stdout.write(`run ${id}: ${r?.events ?? 0} events, ${r?.steps ?? 0} steps\n`);
    }
    process.stdout.write(`rebuilt ${ids.length} runs\n`);
    return 0;
  } finally {
    await pool.end();
    await embedded?.stop();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`db:rebuild: ${(e as Error).message}\n`);
    process.exit(e instanceof ConfigError ? 2 : 1);
  },
);
