import { Logger } from '@nestjs/common';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, loadConfig } from './config/app-config';
import { startServer } from './server';

/** `npm start`: the server on HOST:PORT, with the embedded PostgreSQL unless DATABASE_URL is set. */
async function main(): Promise<void> {
  const logger = new Logger('creditlab');
  const config = loadConfig();
  const server = await startServer(config);
  if (process.env.NODE_ENV !== 'production') {
    // Code-first schema, committed so that schema changes show in review.
    writeFileSync(
      config.schemaFile ?? path.resolve(__dirname, '../../../schema.gql'),
      server.schemaSdl() + '\n',
    );
  }
  // Always printed, whatever LOG_LEVEL: scripts and tests wait for this line.
  process.stdout.write(`Creditlab listening on ${server.url} (GraphQL at ${server.url}/graphql)\n`);
  const stop = (signal: string) => {
    logger.log(`${signal}: shutting down`);
    server.close().then(
      () => process.exit(0),
      (e: unknown) => {
        logger.error(e);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

main().catch((e: unknown) => {
  process.stderr.write(
    `${e instanceof ConfigError ? e.message : ((e as Error).stack ?? String(e))}\n`,
  );
  process.exit(e instanceof ConfigError ? 2 : 1);
});
