import {
  helpText,
  parseCommandLine,
  reportUsageError,
  UsageError,
  type Command,
} from '@creditlab/cli';
import { loadConfig, type AppConfig } from './config/app-config';
import { withCommandDatabase } from './database/command-database';
import { isUuid } from './database/uuid';
import { DomainError } from './errors/domain-error';
import { startupFailure } from './startup-failure';
import { rebuildRun } from './rollouts/projection-rebuild';

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

let config: AppConfig | undefined;

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
  config = loadConfig();
  return withCommandDatabase('db:rebuild', config, async (pool) => {
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
  });
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    // A run that is not there is the caller's mistake; anything else, a database that would not start.
    const { message, status } =
      e instanceof DomainError ? { message: e.message, status: 1 } : startupFailure(e, config);
    process.stderr.write(`db:rebuild: ${message}\n`);
    process.exit(status);
  },
);
