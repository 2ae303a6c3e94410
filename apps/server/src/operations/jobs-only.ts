import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { PUBLIC_PATHS } from '../access/authenticate';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { sendDomainError } from '../errors/send-domain-error';

/**
 * For a process that only takes recompute jobs (CREDITLAB_API=false): health, readiness and
 * metrics stay open for the orchestrator and Prometheus; every other path answers 404 naming the
 * setting, so a client pointed at a worker by mistake learns why at once.
 */
export function jobsOnly(): RequestHandler {
  const error = new DomainError(
    ErrorCode.NotFound,
    'this process takes recompute jobs only (CREDITLAB_API=false): send API requests to a server process',
  );
  return (req: Request, res: Response, next: NextFunction) => {
    if (PUBLIC_PATHS.has(req.path)) return next();
    sendDomainError(req, res, error);
  };
}
