import { writeCredentials } from '@creditlab/credentials';
import type { Logger } from '@nestjs/common';
import type pg from 'pg';
import { generateApiKey, hashApiKey, prefixOf } from './api-key';

export interface BootstrapOptions {
  /** CREDITLAB_ADMIN_KEY: an admin key the operator chose. */
  adminKey?: string;
  credentialsFile: string;
  /** This server's URL, written next to the key so that tools send it only here. */
  url: string;
}

/**
 * Keys on start. An operator's CREDITLAB_ADMIN_KEY is registered if new (a revoked one stays
 * revoked). A database with no key at all gets an admin key over every project, written to the
 * credentials file (0600) for the trainer and the CLIs: the two-command set-up needs no key handling.
 * Runs under an advisory lock so that two processes starting together create one key.
 */
export async function bootstrapAccess(
  pool: pg.Pool,
  options: BootstrapOptions,
  logger: Logger,
): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('creditlab.bootstrap-access'))`);
    if (options.adminKey) {
      const inserted = await client.query(
        `INSERT INTO api_keys (prefix, secret_hash, project, role, name)
         VALUES ($1, $2, NULL, 'admin', 'CREDITLAB_ADMIN_KEY') ON CONFLICT DO NOTHING`,
        [prefixOf(options.adminKey), hashApiKey(options.adminKey)],
      );
      if (inserted.rowCount)
        logger.log(`registered CREDITLAB_ADMIN_KEY as admin key ${prefixOf(options.adminKey)}`);
    }
    const any = await client.query('SELECT 1 FROM api_keys LIMIT 1');
    if (any.rowCount === 0) {
      const created = generateApiKey();
      await client.query(
        `INSERT INTO api_keys (prefix, secret_hash, project, role, name)
         VALUES ($1, $2, NULL, 'admin', 'created on first start')`,
        [created.prefix, created.hash],
      );
      // Written before the commit: a key nobody could read would be useless.
      writeCredentials(
        {
          url: options.url,
          apiKey: created.key,
          project: null,
          role: 'admin',
          createdAt: new Date().toISOString(),
        },
        options.credentialsFile,
      );
      logger.log(
        `first start: created admin key cl_${created.prefix}_… and wrote it to ${options.credentialsFile} (readable by you only)`,
      );
    }
    await client.query('COMMIT');
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    client.release();
  }
}
