import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { GraphQLSchemaHost } from '@nestjs/graphql';
import { lexicographicSortSchema, printSchema } from 'graphql';
import { AppModule } from './app.module';
import { ApiKeysService } from './access/api-keys.service';
import { authenticate } from './access/authenticate';
import { bootstrapAccess } from './access/bootstrap-access';
import { RateLimits } from './access/rate-limits';
import { retiredSettingsIn, type AppConfig } from './config/app-config';
import { Database } from './database/database';
import { prepareDatabase } from './database/prepare-database';
import { startDatabase } from './database/start-database';
import { ConnectionDraining } from './operations/connection-draining';
import {
  JSON_BODY_LIMIT_BYTES,
  jsonBodyErrors,
  jsonBodyGuards,
  parsesJsonBody,
  verifyUtf8,
} from './http/json-body';
import { jobsOnly } from './operations/jobs-only';
import { answerMalformedRequests } from './http/malformed-requests';
import { Metrics } from './operations/metrics';
import { RequestLogging } from './operations/request-logging';
import type { NextFunction, Request, Response } from 'express';
import type { Server } from 'node:http';

/** How long an idle keep-alive connection stays open (Node's default is 5 s). */
const KEEP_ALIVE_MS = 65_000;

export interface RunningServer {
  app: NestExpressApplication;
  /** Base URL, e.g. http://127.0.0.1:4000 */
  url: string;
  db: Database;
  /** Which database it uses, and where its data is (for the start-up banner). */
  database: string;
  /** The GraphQL schema as SDL (what schema.gql holds). */
  schemaSdl(): string;
  /** Stops accepting, closes the app, the pool and the embedded database if this server started it. */
  close(): Promise<void>;
}

/**
 * Brings the server up: the database first (DATABASE_URL, or the embedded
 * PostgreSQL in a persistent data directory), migrations under their advisory
 * lock, then Nest on HOST:PORT.
 */
export async function startServer(config: AppConfig): Promise<RunningServer> {
  const logger = new Logger('creditlab');
  const logging = new RequestLogging(config);
  // Start-up's own lines (the embedded database's among them) are JSON lines at LOG_LEVEL already.
  Logger.overrideLogger(logging.nestLogger());
  for (const warning of retiredSettingsIn()) logger.warn(warning);
  const { url: databaseUrl, embedded, where } = await startDatabase(config);
  const db = Database.connect(
    databaseUrl,
    {
      connections: config.connections.reads,
      ingestConnections: config.connections.ingest,
      statementTimeoutMs: config.connections.statementTimeoutMs,
      preparedStatements: config.connections.preparedStatements,
    },
    embedded,
    config.readReplica,
  );
  try {
    // On the connections without a statement timeout: a migration or a rebuild may take long.
    await prepareDatabase(db.ingestPool, (line) => logger.log(line));
    const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config, db), {
      logger: logging.nestLogger(),
      // A module that cannot be created rejects here (and start-up says why, then stops the
      // database), instead of Nest ending the process on the spot.
      abortOnError: false,
      // JSON bodies only, and not on routes that read the raw body themselves (NDJSON ingest,
      // checkpoint uploads): those take any bytes, whatever Content-Type a client sends.
      bodyParser: false,
    });
    const draining = new ConnectionDraining(app.getHttpServer() as Server);
    app.use(draining.middleware);
    app.use(logging.middleware());
    const metrics = app.get(Metrics);
    app.use((req: Request, res: Response, next: NextFunction) => {
      const end = metrics.httpSeconds.startTimer();
      res.on('finish', () => {
        const route = (req.route as { path?: string } | undefined)?.path ?? 'unmatched';
        end({ method: req.method, route, status: String(res.statusCode) });
      });
      next();
    });
    if (!config.api) app.use(jobsOnly());
    app.use(
      authenticate(app.get(ApiKeysService), app.get(RateLimits), config.access.credentialsFile),
    );
    // After the key is checked: a caller without one is answered at once, not after sending (or
    // trickling) its whole body. Not strict: a body of `null` or `42` is valid JSON, and each
    // route's validator then says what it expected; strict mode would refuse it with a parse error
    // about a valid token.
    // `verify` is left out of Nest's option type because Nest uses it for `rawBody`, which this app
    // does not turn on: it reaches express.json as given.
    const jsonOptions = {
      limit: JSON_BODY_LIMIT_BYTES,
      type: parsesJsonBody,
      strict: false,
      verify: verifyUtf8,
    };
    app.use(jsonBodyGuards(config.limits.idleMs));
    app.useBodyParser('json', jsonOptions);
    app.use(jsonBodyErrors());
    await app.listen(config.port, config.host);
    // Trainers call once per iteration, often more than Node's default 5 s apart: a keep-alive
    // connection closed by the server just as a client reuses it fails that client's request (a
    // mutation is not retried). Idle connections stay open longer than a typical iteration; the
    // header timeout must exceed it.
    const http = app.getHttpServer() as Server;
    http.keepAliveTimeout = KEEP_ALIVE_MS;
    http.headersTimeout = KEEP_ALIVE_MS + 1000;
    answerMalformedRequests(http);
    const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    // Keys are for the API: a jobs-only process must not write its own URL, which serves no API,
    // to the credentials file as the first start's admin key.
    if (config.api)
      await bootstrapAccess(
        db.pool,
        { adminKey: config.access.adminKey, credentialsFile: config.access.credentialsFile, url },
        logger,
      );
    let closed: Promise<void> | undefined;
    return {
      app,
      url,
      db,
      // The replica is named where the database is, so that a start-up line shows it was taken.
      database:
        (config.readReplica
          ? `${where}; queries read ${replicaWhere(config.readReplica.url)}`
          : where) +
        (config.checkpointBucket ? `; checkpoints go to ${config.checkpointBucket.url}` : ''),
      schemaSdl: () => printSchema(lexicographicSortSchema(app.get(GraphQLSchemaHost).schema)),
      close: () =>
        (closed ??= (async () => {
          // Stop accepting, let in-flight requests finish (an ingest request commits or rolls back whole),
          // then let Nest stop the job workers (they finish their current chunk) and the worker threads.
          await draining.drain();
          await app.close();
          await db.close();
          await embedded?.stop();
        })()),
    };
  } catch (e) {
    await db.close().catch(() => undefined);
    await embedded?.stop().catch(() => undefined);
    throw e;
  }
}

/** Where the read replica is, for the start-up line: its host and database, never its credentials. */
function replicaWhere(url: string): string {
  const u = new URL(url);
  return `the read replica at ${u.host}${u.pathname}`;
}
