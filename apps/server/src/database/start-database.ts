import {
  chooseDataDir,
  ensureDatabase,
  startEmbeddedPostgres,
  type RunningPostgres,
} from '@creditlab/db';
import { Logger } from '@nestjs/common';
import type { AppConfig } from '../config/app-config';

export interface StartedDatabase {
  url: string;
  /** The embedded PostgreSQL, when this server started one (no DATABASE_URL). */
  embedded?: RunningPostgres;
  /** Where the data is, for the start-up banner. */
  where: string;
}

/**
 * The database the server uses: DATABASE_URL, or else the embedded PostgreSQL in its data
 * directory (a database of an older default location is moved or pointed out first), supervised
 * for as long as the server runs.
 */
export async function startDatabase(config: AppConfig): Promise<StartedDatabase> {
  if (config.databaseUrl) {
    const url = new URL(config.databaseUrl);
    return { url: config.databaseUrl, where: `PostgreSQL at ${url.host}${url.pathname}` };
  }
  const logger = new Logger('embedded-postgres');
  const { port, database } = config.embeddedPostgres;
  const { dir, notes } = await chooseDataDir(config.embeddedPostgres.dataDir);
  for (const note of notes) logger.warn(note);
  logger.log(`starting the embedded PostgreSQL: data directory ${dir}, port ${port}`);
  const embedded = await startEmbeddedPostgres({
    dataDir: dir,
    port,
    onLog: (line) => logger.debug(line),
    onNotice: ({ level, message }) => logger[level](message),
  });
  try {
    return {
      url: await ensureDatabase(embedded.url, database),
      embedded,
      where: `embedded PostgreSQL, data in ${dir} (port ${port})`,
    };
  } catch (e) {
    await embedded.stop();
    throw e;
  }
}
