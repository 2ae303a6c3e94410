import type { Request } from 'express';
import { getOperationAST, parse } from 'graphql';
import type { OperationKind } from '../database/database';

/**
 * The kind of operation an HTTP GraphQL request runs (query, mutation, subscription), read from its
 * document before Apollo runs it, so that its context can send a query's reads to the read replica
 * (Database.readerFor). Undefined when the request names no single operation or does not parse:
 * Apollo then refuses it itself, with its own message. `maxTokens` bounds the parse as Apollo's is.
 */
export function operationKind(req: Request, maxTokens: number): OperationKind | undefined {
  const params: unknown = req.method === 'GET' ? req.query : req.body;
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return undefined;
  const { query, operationName } = params as { query?: unknown; operationName?: unknown };
  if (typeof query !== 'string') return undefined;
  try {
    const document = parse(query, { maxTokens });
    const name = typeof operationName === 'string' ? operationName : undefined;
    return getOperationAST(document, name)?.operation as OperationKind | undefined;
  } catch {
    return undefined;
  }
}
