import { credentialsPath } from '@creditlab/credentials';
import { z } from 'zod';
import { DEFAULT_CHUNK_STEPS } from '../jobs/recompute-chunks';
import { MAX_BUCKET_CHECKPOINT_BYTES, parseBucketUrl } from '../checkpoints/checkpoint-bucket';
import { byteSize, byteSizeOrOff } from './byte-size';

/**
 * Every setting of the server, read once from the environment, typed and
 * defaulted; a bad value stops start-up with a message naming the variable.
 */
const mib = 1024 * 1024;
const schema = z.object({
  HOST: z.string().default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65535).default(4000),
  /** Postgres to use; when unset the server starts the embedded one. */
  DATABASE_URL: z.string().url().optional(),
  /** A hot standby of DATABASE_URL's database: GraphQL queries read from it (docs/scaling.md). */
  CREDITLAB_READ_REPLICA_URL: z.string().url().optional(),
  CREDITLAB_READ_REPLICA_CONNECTIONS: z.coerce.number().int().min(1).default(10),
  CREDITLAB_PG_DIR: z.string().optional(),
  CREDITLAB_PG_PORT: z.coerce.number().int().min(1).max(65535).default(54329),
  CREDITLAB_PG_DATABASE: z
    .string()
    .regex(/^[a-z_][a-z0-9_]*$/)
    .default('creditlab'),
  CREDITLAB_MAX_LINE_BYTES: byteSize(1024, 64 * mib),
  CREDITLAB_MAX_REQUEST_BYTES: byteSize(1024, 8192 * mib),
  CREDITLAB_MAX_CHECKPOINT_BYTES: byteSize(1024, 256 * mib, MAX_BUCKET_CHECKPOINT_BYTES),
  /** An S3-compatible bucket for new checkpoints' bytes (docs/scaling.md); unset: the database. */
  CREDITLAB_CHECKPOINT_BUCKET: z
    .string()
    .superRefine((url, ctx) => {
      try {
        parseBucketUrl(url);
      } catch (e) {
        ctx.addIssue({ code: 'custom', message: (e as Error).message });
      }
    })
    .optional(),
  /** Name the bucket in the path (MinIO, most stores other than AWS); default: when an endpoint is set. */
  CREDITLAB_CHECKPOINT_BUCKET_PATH_STYLE: z.enum(['true', 'false']).optional(),
  /** The longest one request to the bucket (a part of up to 8 MiB) may wait for its answer. */
  CREDITLAB_CHECKPOINT_BUCKET_TIMEOUT_SECONDS: z.coerce.number().positive().default(120),
  /**
   * How long a presigned download URL (`GET …/checkpoints/{k}/url`) stays valid; S3's signatures
   * allow a week at most.
   */
  CREDITLAB_CHECKPOINT_URL_SECONDS: z.coerce.number().int().min(1).max(604_800).default(900),
  /** The bucket's endpoint as clients reach it, when it differs from the server's (a private address). */
  CREDITLAB_CHECKPOINT_URL_ENDPOINT: z
    .string()
    .url()
    // A path would be signed into every URL, and a proxy that strips it would fail every signature.
    .refine(
      (url) => /^https?:\/\/[^/?#]+\/?$/.test(url),
      'expected http(s)://host[:port], with no path, query or fragment',
    )
    .optional(),
  CREDITLAB_CHECKPOINT_UPLOADS: z.coerce.number().int().min(1).default(32),
  CREDITLAB_CHECKPOINT_DOWNLOADS: z.coerce.number().int().min(1).default(64),
  CREDITLAB_INGEST_THREAD_MIN_BYTES: byteSizeOrOff(0, 64 * 1024),
  CREDITLAB_INGEST_IDLE_SECONDS: z.coerce.number().positive().default(30),
  CREDITLAB_DOWNLOAD_IDLE_SECONDS: z.coerce.number().positive().default(300),
  CREDITLAB_INGEST_CONCURRENCY_PER_KEY: z.coerce.number().int().min(1).default(16),
  CREDITLAB_CHECKPOINT_CONCURRENCY_PER_KEY: z.coerce.number().int().min(1).default(8),
  CREDITLAB_EXPORT_CONCURRENCY: z.coerce.number().int().min(1).default(4),
  CREDITLAB_DB_CONNECTIONS: z.coerce.number().int().min(2).default(10),
  CREDITLAB_INGEST_CONNECTIONS: z.coerce.number().int().min(1).default(8),
  // PostgreSQL's statement_timeout is a 32-bit count of milliseconds.
  CREDITLAB_STATEMENT_TIMEOUT_SECONDS: z.coerce.number().min(0).max(2_147_483).default(120),
  CREDITLAB_PREPARED_STATEMENTS: z.enum(['on', 'off']).default('on'),
  CREDITLAB_GRAPHQL_MAX_DEPTH: z.coerce.number().int().min(2).default(12),
  CREDITLAB_GRAPHQL_MAX_COST: z.coerce.number().int().min(10).default(250_000),
  CREDITLAB_GRAPHQL_MAX_FIELDS: z.coerce.number().int().min(10).default(10_000),
  CREDITLAB_GRAPHQL_MAX_TOKENS: z.coerce.number().int().min(100).default(20_000),
  CREDITLAB_SCHEMA_FILE: z.string().optional(),
  LOG_LEVEL: z.enum(['error', 'warn', 'log', 'debug', 'verbose']).default('log'),
  CREDITLAB_ESTIMATOR_THREADS: z.coerce.number().int().min(1).max(64).default(2),
  CREDITLAB_WORKER: z.enum(['true', 'false']).default('true'),
  CREDITLAB_API: z.enum(['true', 'false']).default('true'),
  CREDITLAB_JOB_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(1),
  CREDITLAB_PACK_ITERATIONS: z.enum(['on-append', 'on-complete', 'on-read']).default('on-append'),
  CREDITLAB_RECOMPUTE_TURN_MS: z.coerce.number().int().min(1).default(2000),
  CREDITLAB_RECOMPUTE_CHUNK_STEPS: z.coerce.number().int().min(1).default(DEFAULT_CHUNK_STEPS),
  CREDITLAB_JOB_POLL_SECONDS: z.coerce.number().min(0.1).default(0.5),
  CREDITLAB_JOB_EXPIRE_SECONDS: z.coerce.number().int().min(1).default(900),
  CREDITLAB_JOB_MAINTENANCE_SECONDS: z.coerce.number().int().min(1).default(60),
  CREDITLAB_ADMIN_KEY: z.string().min(32, 'at least 32 characters').optional(),
  CREDITLAB_CREDENTIALS: z.string().optional(),
  CREDITLAB_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(6000),
  CREDITLAB_KEY_CACHE_SECONDS: z.coerce.number().min(0).default(10),
  CREDITLAB_UNKNOWN_KEYS_PER_MINUTE: z.coerce.number().int().min(0).default(60),
});

export type EnvConfig = z.infer<typeof schema>;

export interface AppConfig {
  host: string;
  port: number;
  databaseUrl?: string;
  /** A hot standby that GraphQL queries read from, and its pool's size. */
  readReplica?: { url: string; connections: number };
  /** The S3-compatible bucket new checkpoints go to; undefined: the database. */
  checkpointBucket?: {
    url: string;
    pathStyle: boolean;
    timeoutMs: number;
    endpoint?: string;
    /** Presigned download URLs: how long they last, and the endpoint they name if not `endpoint`. */
    downloadUrls: { seconds: number; endpoint?: string };
  };
  embeddedPostgres: { dataDir?: string; port: number; database: string };
  /** Connections per pool: reads and the online path, and ingest transactions (kept apart). */
  connections: {
    reads: number;
    ingest: number;
    /** The longest a statement on the reads' connections may run (0: no limit). */
    statementTimeoutMs: number;
    /**
     * Whether ingest's connections keep the statements they send again and again prepared
     * (repeated-statements.ts); off behind a pooler that cannot keep named statements.
     */
    preparedStatements: boolean;
  };
  /**
   * Ingest bodies of at least this many bytes are parsed and checked on a thread of their own
   * (prepare-thread.ts); undefined: every body on the request's thread.
   */
  ingestThreadMinBytes: number | undefined;
  limits: {
    maxLineBytes: number;
    maxRequestBytes: number;
    /** An ingest body that brings no new event (a checkpoint or JSON body: no bytes) for this long gets 408. */
    idleMs: number;
    /**
     * A checkpoint download whose client takes nothing for this long is cut off. Seen through the
     * sockets' buffers (megabytes), so long enough not to be a floor on a slow client's rate.
     */
    downloadIdleMs: number;
    /** Ingest requests one key may have in progress at once in this process (more: 429). */
    ingestConcurrencyPerKey: number;
    /** Checkpoint uploads, and downloads, one key may have in progress at once (each holds a connection). */
    checkpointConcurrencyPerKey: number;
    /** Checkpoint uploads in progress in this process, all keys together (each holds its parts' buffers). */
    checkpointUploads: number;
    /** Checkpoint downloads in progress in this process, all keys together (each may hold a connection to the bucket). */
    checkpointDownloads: number;
    /** Largest checkpoint upload (at most 1 GiB in the database, 64 GiB in a bucket). */
    maxCheckpointBytes: number;
    /** Exports in progress at once in this process (each holds a PostgreSQL connection of its own). */
    exportConcurrency: number;
    graphqlMaxDepth: number;
    graphqlMaxCost: number;
    /** Fields an operation may expand to, fragments spread in place. */
    graphqlMaxFields: number;
    /** Tokens a GraphQL document may have (the parser stops there). */
    graphqlMaxTokens: number;
  };
  /**
   * Whether this process serves the API (HTTP and GraphQL); without it, a job worker that answers
   * only /healthz, /readyz and /metrics (CREDITLAB_API=false with CREDITLAB_WORKER=true).
   */
  api: boolean;
  /** Where the code-first GraphQL schema is written (committed as schema.gql). */
  schemaFile?: string;
  logLevel: EnvConfig['LOG_LEVEL'];
  recompute: {
    /** Worker threads for estimators in this process. */
    estimatorThreads: number;
    /** Whether this process takes recompute jobs from the queue. */
    worker: boolean;
    /**
     * When iterations are packed for recompute: by the append that writes an iteration whole, from
     * the rows in hand, and the others as each completes (on-append); all of them as each completes,
     * read back from the step slices in the background (on-complete); or only once a recompute job
     * has read them from the step slices (on-read). The first two make recompute read fast from the
     * start, and ingest pays for it.
     */
    packIterations: 'on-append' | 'on-complete' | 'on-read';
    /** Jobs this process works on at once. */
    concurrency: number;
    /** Work (ms) a job does before it yields its turn to the next job in the queue (round-robin across runs). */
    turnMs: number;
    /** Steps a job reads, estimates and stores together (recompute-chunks.ts). */
    chunkSteps: number;
    /** How often an idle worker looks for jobs queued by other processes (its own process wakes it at once). */
    pollSeconds: number;
    /** A job whose worker went silent this long is retried by another worker. */
    expireSeconds: number;
    maintenanceSeconds: number;
  };
  access: {
    /** An admin key the operator chose; the server makes sure it exists (unless revoked). */
    adminKey?: string;
    /** Where the first start writes the admin key it creates (CREDITLAB_CREDENTIALS, else ~/.creditlab/credentials.json). */
    credentialsFile: string;
    /** Requests per minute per key, unless the key has its own limit. */
    rateLimitPerMinute: number;
    /** How long a key lookup is reused; bounds how late another process notices a revocation. */
    keyCacheSeconds: number;
    /** Lookups of keys no one holds, per client address and minute, before its keys are refused unread (0: no limit). */
    unknownKeysPerMinute: number;
  };
}

export class ConfigError extends Error {}

/**
 * Settings this server no longer reads, and what took their place. One still set is named in a
 * warning at start rather than refused: the server runs the same without it, and a deployment's
 * environment should not stop a start after an upgrade.
 */
const RETIRED_SETTINGS: Record<string, string> = {
  CREDITLAB_CHECKPOINT_MEMORY_BYTES:
    'checkpoint uploads are stored in parts as they arrive, so no memory is set aside for them (CREDITLAB_CHECKPOINT_CONCURRENCY_PER_KEY still bounds each key)',
};

/** A warning for each retired setting `env` still sets. */
export function retiredSettingsIn(env: NodeJS.ProcessEnv = process.env): string[] {
  return Object.entries(RETIRED_SETTINGS)
    .filter(([name]) => env[name] !== undefined)
    .map(([name, why]) => `${name} is set but no longer used: ${why}`);
}

export function loadConfig(given: NodeJS.ProcessEnv = process.env): AppConfig {
  // A setting set to nothing is unset, as the container's entrypoint takes it (compose files
  // write `NAME: ${NAME:-}`): its default, not a refusal.
  const env = Object.fromEntries(Object.entries(given).filter(([, value]) => value !== ''));
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  if (e.CREDITLAB_API === 'false' && e.CREDITLAB_WORKER === 'false')
    throw new ConfigError(
      'invalid configuration:\n  CREDITLAB_API: false with CREDITLAB_WORKER=false leaves this process nothing to do (serve the API, take recompute jobs, or both)',
    );
  if (e.CREDITLAB_CHECKPOINT_BUCKET === undefined && e.CREDITLAB_MAX_CHECKPOINT_BYTES > 1024 * mib)
    throw new ConfigError(
      `invalid configuration:\n  CREDITLAB_MAX_CHECKPOINT_BYTES: at most ${1024 * mib} (1 GiB) while checkpoints are stored in the database; set CREDITLAB_CHECKPOINT_BUCKET for larger ones (up to 64 GiB)`,
    );
  // The AWS SDK's own settings for a store other than AWS, which the SDK reads itself.
  const endpoint = env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  return {
    host: e.HOST,
    port: e.PORT,
    databaseUrl: e.DATABASE_URL,
    checkpointBucket:
      e.CREDITLAB_CHECKPOINT_BUCKET === undefined
        ? undefined
        : {
            url: e.CREDITLAB_CHECKPOINT_BUCKET,
            pathStyle:
              (e.CREDITLAB_CHECKPOINT_BUCKET_PATH_STYLE ?? String(endpoint !== undefined)) ===
              'true',
            endpoint,
            timeoutMs: e.CREDITLAB_CHECKPOINT_BUCKET_TIMEOUT_SECONDS * 1000,
            downloadUrls: {
              seconds: e.CREDITLAB_CHECKPOINT_URL_SECONDS,
              endpoint: e.CREDITLAB_CHECKPOINT_URL_ENDPOINT,
            },
          },
    readReplica:
      e.CREDITLAB_READ_REPLICA_URL === undefined
        ? undefined
        : { url: e.CREDITLAB_READ_REPLICA_URL, connections: e.CREDITLAB_READ_REPLICA_CONNECTIONS },
    embeddedPostgres: {
      dataDir: e.CREDITLAB_PG_DIR,
      port: e.CREDITLAB_PG_PORT,
      database: e.CREDITLAB_PG_DATABASE,
    },
    connections: {
      reads: e.CREDITLAB_DB_CONNECTIONS,
      ingest: e.CREDITLAB_INGEST_CONNECTIONS,
      statementTimeoutMs: e.CREDITLAB_STATEMENT_TIMEOUT_SECONDS * 1000,
      preparedStatements: e.CREDITLAB_PREPARED_STATEMENTS === 'on',
    },
    ingestThreadMinBytes:
      e.CREDITLAB_INGEST_THREAD_MIN_BYTES === 'off'
        ? undefined
        : e.CREDITLAB_INGEST_THREAD_MIN_BYTES,
    limits: {
      maxLineBytes: e.CREDITLAB_MAX_LINE_BYTES,
      maxRequestBytes: e.CREDITLAB_MAX_REQUEST_BYTES,
      idleMs: e.CREDITLAB_INGEST_IDLE_SECONDS * 1000,
      downloadIdleMs: e.CREDITLAB_DOWNLOAD_IDLE_SECONDS * 1000,
      ingestConcurrencyPerKey: e.CREDITLAB_INGEST_CONCURRENCY_PER_KEY,
      checkpointConcurrencyPerKey: e.CREDITLAB_CHECKPOINT_CONCURRENCY_PER_KEY,
      checkpointUploads: e.CREDITLAB_CHECKPOINT_UPLOADS,
      checkpointDownloads: e.CREDITLAB_CHECKPOINT_DOWNLOADS,
      maxCheckpointBytes: e.CREDITLAB_MAX_CHECKPOINT_BYTES,
      exportConcurrency: e.CREDITLAB_EXPORT_CONCURRENCY,
      graphqlMaxDepth: e.CREDITLAB_GRAPHQL_MAX_DEPTH,
      graphqlMaxCost: e.CREDITLAB_GRAPHQL_MAX_COST,
      graphqlMaxFields: e.CREDITLAB_GRAPHQL_MAX_FIELDS,
      graphqlMaxTokens: e.CREDITLAB_GRAPHQL_MAX_TOKENS,
    },
    api: e.CREDITLAB_API === 'true',
    schemaFile: e.CREDITLAB_SCHEMA_FILE,
    logLevel: e.LOG_LEVEL,
    recompute: {
      estimatorThreads: e.CREDITLAB_ESTIMATOR_THREADS,
      worker: e.CREDITLAB_WORKER === 'true',
      packIterations: e.CREDITLAB_PACK_ITERATIONS,
      concurrency: e.CREDITLAB_JOB_CONCURRENCY,
      turnMs: e.CREDITLAB_RECOMPUTE_TURN_MS,
      chunkSteps: e.CREDITLAB_RECOMPUTE_CHUNK_STEPS,
      pollSeconds: e.CREDITLAB_JOB_POLL_SECONDS,
      expireSeconds: e.CREDITLAB_JOB_EXPIRE_SECONDS,
      maintenanceSeconds: e.CREDITLAB_JOB_MAINTENANCE_SECONDS,
    },
    access: {
      adminKey: e.CREDITLAB_ADMIN_KEY,
      credentialsFile: credentialsPath(env),
      rateLimitPerMinute: e.CREDITLAB_RATE_LIMIT_PER_MINUTE,
      keyCacheSeconds: e.CREDITLAB_KEY_CACHE_SECONDS,
      unknownKeysPerMinute: e.CREDITLAB_UNKNOWN_KEYS_PER_MINUTE,
    },
  };
}
