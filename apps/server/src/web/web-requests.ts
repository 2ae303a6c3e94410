import type { Request } from 'express';

/** Paths the API owns: never answered with the web app, always with a key. */
const API_PREFIXES = ['/graphql', '/v1', '/healthz', '/readyz', '/metrics'];

const underApi = (path: string): boolean =>
  API_PREFIXES.some((p) => path === p || path.startsWith(`${p}/`));

/**
 * A browser opening the GraphQL explorer: `GET /graphql` asking for HTML with no query in the URL.
 * GraphQL over GET (a `query` parameter) and every POST stay with Apollo.
 */
export function wantsExplorerPage(req: Request): boolean {
  return (
    (req.method === 'GET' || req.method === 'HEAD') &&
    req.path === '/graphql' &&
    req.query.query === undefined &&
    req.accepts(['application/json', 'text/html']) === 'text/html'
  );
}

/**
 * Requests for the web app's pages and assets, which load without a key (the app then sends the
 * signed-in key as a bearer header on its API calls): reads of any path outside the API, and the
 * explorer page.
 */
export function isWebPageRequest(req: Request): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  return !underApi(req.path) || wantsExplorerPage(req);
}
