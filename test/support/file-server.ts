import { CreditlabClient } from '@creditlab/client';
import { ADMIN_KEY, api, startTestServer, type ServerProcess } from './test-server';

export interface FileServer {
  server: ServerProcess & { databaseUrl: string };
  /** A client with the admin key. */
  client: CreditlabClient;
  /** POSTs `events` as NDJSON to the run's events endpoint. */
  post(runId: string, events: unknown[]): Promise<Response>;
}

/**
 * A server on a fresh database for the calling spec file: started before its tests, stopped after.
 * The fields are filled in by `beforeAll`, so read them inside tests.
 */
export function serverForFile(env: Record<string, string> = {}): FileServer {
  const ctx = {
    post: (runId: string, events: unknown[]) =>
      api(`${ctx.server.url}/v1/runs/${runId}/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-ndjson' },
        body: events.map((e) => JSON.stringify(e)).join('\n') + '\n',
      }),
  } as FileServer;
  beforeAll(async () => {
    ctx.server = await startTestServer(env);
    ctx.client = new CreditlabClient({ url: ctx.server.url, apiKey: ADMIN_KEY });
  });
  afterAll(() => ctx.server?.stop());
  return ctx;
}
