import {
  helpText,
  parseCommandLine,
  reportUsageError,
  UsageError,
  type Command,
} from '@creditlab/cli';
import { loadConfig, type AppConfig } from './config/app-config';
import { withCommandDatabase } from './database/command-database';
import { startupFailure } from './startup-failure';

const MIGRATE_COMMAND: Command<Record<string, never>> = {
  invocation: 'npm run db:migrate --',
  name: 'db:migrate',
  synopsis: ['[--help]'],
  summary:
    'Applies the pending migrations (migrations/, in order, under an advisory lock) and the data steps they leave to the code (projections rebuilt from the event log, body hashes of old events) without starting the server, to DATABASE_URL, or else to the embedded PostgreSQL the server would start. The server does the same on start.',
  flags: {},
  examples: [
    'npm run db:migrate',
    'DATABASE_URL=postgres://creditlab@db.internal/creditlab npm run db:migrate',
  ],
  notes: `environment (as for the server):
  DATABASE_URL            the PostgreSQL to migrate (default: unset, the embedded one)
  CREDITLAB_PG_DIR        the embedded database's folder (default: ~/.creditlab/pg, or /var/lib/creditlab/pg as root)
  CREDITLAB_PG_PORT       its port (default: 54329)
  CREDITLAB_PG_DATABASE   its database (default: creditlab)

exit status: 0 done, 1 a migration or the database failed, 2 bad usage or configuration`,
};

let config: AppConfig | undefined;

/** `npm run db:migrate`: brings DATABASE_URL, or the embedded database, up to date. */
async function main(argv: string[]): Promise<number> {
  try {
    if (parseCommandLine(MIGRATE_COMMAND, argv).help) {
      process.stdout.write(helpText(MIGRATE_COMMAND));
      return 0;
    }
  } catch (e) {
    if (e instanceof UsageError) return reportUsageError('db:migrate', e);
    throw e;
  }
  config = loadConfig();
  process.env.PGAPPNAME ??= 'creditlab-migrate'; // its connections' name in pg_stat_activity
  return withCommandDatabase('db:migrate', config, async () => {
    process.stdout.write('the database is up to date\n');
    return 0;
  });
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    const { message, status } = startupFailure(e, config);
    process.stderr.write(`db:migrate: ${message}\n`);
    process.exit(status);
  },
);
