import type { DynamicModule } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoggerModule } from 'nestjs-pino';
import { attachedPrincipal } from '../access/authenticate';
import type { AppConfig } from '../config/app-config';

const PINO_LEVEL: Record<AppConfig['logLevel'], string> = {
  error: 'error',
  warn: 'warn',
  log: 'info',
  debug: 'debug',
  verbose: 'trace',
};

/** Routes that scrapers and orchestrators call every few seconds: not worth a log line each. */
const QUIET = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Structured JSON logs (pino) with a request id on every line a request
 * causes: the caller's `X-Request-Id` when it sends one, else a fresh UUID,
 * echoed in the response. API keys and cookies never reach the log.
 */
export function loggingModule(config: AppConfig): DynamicModule {
  return LoggerModule.forRoot({
    pinoHttp: {
      level: PINO_LEVEL[config.logLevel],
      genReqId: (req: IncomingMessage, res: ServerResponse) => {
        const given = req.headers['x-request-id'];
        const id =
          typeof given === 'string' && /^[\w.-]{1,128}$/.test(given) ? given : randomUUID();
        res.setHeader('X-Request-Id', id);
        return id;
      },
      autoLogging: {
        ignore: (req: IncomingMessage) => QUIET.has((req.url ?? '').split('?')[0] ?? ''),
      },
      redact: ['req.headers.authorization', 'req.headers.cookie'],
      // Which key made the request (its public prefix), on the request's completion line.
      customProps: (req: IncomingMessage) => {
        const principal = attachedPrincipal(req);
        return principal ? { key: principal.prefix, project: principal.project } : {};
      },
      customLogLevel: (_req: IncomingMessage, res: ServerResponse, err?: Error) =>
        err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info',
    },
  });
}
