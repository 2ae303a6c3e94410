import type { LoggerService, LogLevel } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import pino, { type Logger } from 'pino';
import { pinoHttp, type HttpLogger } from 'pino-http';
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
 * Structured JSON logs (pino): one completion line per request, carrying the request id (the
 * caller's `X-Request-Id` when it sends one, else a fresh UUID, echoed in the response) and the
 * key's public prefix; API keys and cookies never reach the log. Every Nest log line written
 * while a request is handled carries that request's id too (AsyncLocalStorage).
 */
export class RequestLogging {
  readonly root: Logger;
  private readonly current = new AsyncLocalStorage<Logger>();
  private readonly http: HttpLogger;

  constructor(config: Pick<AppConfig, 'logLevel'>) {
    this.root = pino({ level: PINO_LEVEL[config.logLevel] });
    this.http = pinoHttp({
      logger: this.root,
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
    });
  }

  /** Express middleware: request logging, and the request's logger for everything it causes. */
  middleware() {
    return (req: Request, res: Response, next: NextFunction): void => {
      this.http(req, res);
      this.current.run(req.log, next);
    };
  }

  /** Nest's logger interface over pino, bound to the current request when there is one. */
  nestLogger(): LoggerService {
    const log = (level: 'info' | 'error' | 'warn' | 'debug' | 'trace') => {
      return (message: unknown, ...rest: unknown[]) => {
        const logger = this.current.getStore() ?? this.root;
        const context = typeof rest.at(-1) === 'string' ? (rest.at(-1) as string) : undefined;
        if (message instanceof Error) logger[level]({ context, err: message }, message.message);
        else if (typeof message === 'object' && message !== null)
          logger[level]({ context, ...message });
        else logger[level]({ context }, String(message));
      };
    };
    return {
      log: log('info'),
      error: log('error'),
      warn: log('warn'),
      debug: log('debug'),
      verbose: log('trace'),
      fatal: log('error'),
      setLogLevels: (levels: LogLevel[]) => {
        const order: LogLevel[] = ['verbose', 'debug', 'log', 'warn', 'error'];
        const lowest = order.find((l) => levels.includes(l));
        if (lowest) this.root.level = PINO_LEVEL[lowest === 'fatal' ? 'error' : lowest] ?? 'info';
      },
    };
  }
}
