import { Logger } from '@nestjs/common';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig, type AppConfig } from './config/app-config';
import { startServer } from './server';
import { startupFailure } from './startup-failure';
import { onStopRequest } from './stop-requests';

let config: AppConfig | undefined;

/** `npm start`: the server on HOST:PORT, with the embedded PostgreSQL unless DATABASE_URL is set. */
async function main(): Promise<void> {
  const logger = new Logger('creditlab');
  // Listening from the start: a stop asked for while starting is carried out once started.
  let stopRequested = false;
  let stop = () => void (stopRequested = true);
  onStopRequest(logger, () => stop());
  config = loadConfig();
  // Every connection of this process says what it is in pg_stat_activity (and in the migration
  // lock's holder line), unless DATABASE_URL or PGAPPNAME names it otherwise; pg-boss names its own.
  process.env.PGAPPNAME ??= 'creditlab-server';
  const server = await startServer(config);
  stop = () =>
    void server.close().then(
      () => process.exit(0),
      (e: unknown) => {
        logger.error(e);
        process.exit(1);
      },
    );
  if (stopRequested) return stop();
  if (process.env.NODE_ENV !== 'production') {
    // Code-first schema, committed so that schema changes show in review.
    writeFileSync(
      config.schemaFile ?? path.resolve(__dirname, '../../../schema.gql'),
      server.schemaSdl() + '\n',
    );
  }
  // Always printed, whatever LOG_LEVEL: scripts and tests wait for this line.
  const serves = config.api
    ? `GraphQL at ${server.url}/graphql`
    : 'recompute jobs only: /healthz, /readyz and /metrics';
  process.stdout.write(
    `Creditlab listening on ${server.url} (${serves}); database: ${server.database}\n`,
  );
}

main().catch((e: unknown) => {
  const { message, status } = startupFailure(e, config);
  process.stderr.write(`${message}\n`);
  process.exit(status);
});
