import { createClient, type Client } from 'graphql-ws';
import type { Capabilities } from './capabilities';
import { currentKey } from './session';

/**
 * Live updates of a run: the `runProgress` subscription (graphql-ws on /graphql, the key in
 * connection_init) where the server has it and serves it, else a poll every `pollMs`. `onChange` is called on every
 * append and job progress; the caller refetches what it shows. Returns the stop function.
 */
export function watchRun(
  caps: Capabilities,
  runId: string,
  onChange: () => void,
  pollMs = 2000,
): () => void {
  if (!caps.has('Subscription.runProgress')) {
    const timer = setInterval(onChange, pollMs);
    return () => clearInterval(timer);
  }
  // A subscription the server refuses (over the key's rate limit, the key revoked) or loses falls
  // back to polling, so that the page keeps up either way.
  let timer: ReturnType<typeof setInterval> | undefined;
  const poll = () => (timer ??= setInterval(onChange, pollMs));
  const stop = socket().subscribe(
    {
      query: `subscription Live($runId: ID!) { runProgress(runId: $runId) { runId lastSeq } }`,
      variables: { runId },
    },
    {
      next: (message) => (message.errors ? poll() : onChange()),
      error: () => poll(),
      complete: () => undefined,
    },
  );
  return () => {
    stop();
    clearInterval(timer);
  };
}

let shared: { key: string; client: Client } | undefined;

function socket(): Client {
  const key = currentKey() ?? '';
  if (shared?.key === key) return shared.client;
  void shared?.client.dispose();
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`;
  const client = createClient({
    url,
    lazy: true,
    connectionParams: { authorization: `Bearer ${key}` },
    retryAttempts: 5,
  });
  shared = { key, client };
  return client;
}
