import { ADMIN_KEY } from '../../test/support/test-server';

/** The request other users make while trainers upload: the runs page's query. */
const RUNS_QUERY = JSON.stringify({
  query: '{ runs(first: 20) { nodes { id name status lastSeq lastIteration } } }',
});

export interface Latencies {
  count: number;
  p50: number;
  p95: number;
  max: number;
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

export function summarise(ms: number[]): Latencies {
  const s = [...ms].sort((a, b) => a - b);
  return { count: s.length, p50: quantile(s, 0.5), p95: quantile(s, 0.95), max: s.at(-1) ?? NaN };
}

/**
 * A GraphQL request (`body`, its JSON) timed: the milliseconds and the answer's data. A failed query
 * is an error: contention must not lose requests.
 */
export async function timedQuery(
  url: string,
  body: string,
  label = 'query',
): Promise<{ ms: number; data: unknown }> {
  const t0 = performance.now();
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_KEY}` },
    body,
  });
  const answer = (await res.json()) as { data?: unknown; errors?: unknown };
  if (!res.ok || answer.errors)
    throw new Error(`${label}: ${res.status} ${JSON.stringify(answer)}`);
  return { ms: performance.now() - t0, data: answer.data };
}

/** One runs query, timed (ms). */
const timedRunsQuery = async (url: string) => (await timedQuery(url, RUNS_QUERY, 'runs query')).ms;

/** Sends the runs query to `urls` in turn, one at a time with `pauseMs` between, until stopped. */
export function probeLatency(urls: string[], pauseMs = 50): { stop(): Promise<number[]> } {
  let running = true;
  const times: number[] = [];
  const done = (async () => {
    for (let k = 0; running; k++) {
      times.push(await timedRunsQuery(urls[k % urls.length] as string));
      await new Promise((r) => setTimeout(r, pauseMs));
    }
  })();
  // Its failure is reported by stop(); unawaited until then, it must not end the process on its own
  // (a benchmark stopped by a signal stops the servers under a running probe).
  done.catch(() => undefined);
  return {
    stop: async () => {
      running = false;
      await done;
      return times;
    },
  };
}

/** `n` runs queries one after the other on an idle server: the baseline. */
export async function idleLatency(url: string, n: number): Promise<number[]> {
  const times: number[] = [];
  for (let k = 0; k < n; k++) times.push(await timedRunsQuery(url));
  return times;
}
