import { APPEND_PHASES, type AppendPhase } from '../../apps/server/src/rollouts/append-clock';

/** A server's /metrics, series by series: `name{labels}` as Prometheus writes it → its value. */
export async function scrapeMetrics(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    series.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return series;
}

/** Several processes' scrapes as one: each series summed (counters and histograms add up). */
export function summed(scrapes: Map<string, number>[]): Map<string, number> {
  const total = new Map<string, number>();
  for (const scrape of scrapes)
    for (const [series, value] of scrape) total.set(series, (total.get(series) ?? 0) + value);
  return total;
}

/** Where the append requests between two scrapes spent their time, in seconds per request. */
export interface AppendBreakdown {
  requests: number;
  /** Mean per request of each phase (creditlab_append_phase_seconds). */
  phases: Record<AppendPhase, number>;
  /** Mean per request of the time in the appender (creditlab_append_seconds). */
  append: number;
  /** Mean per request of the HTTP handling of POST /v1/runs/:id/events (creditlab_http_request_seconds). */
  http: number;
}

const EVENTS_ROUTE = 'method="POST",route="/v1/runs/:id/events",status="200"';

export function appendBreakdown(
  before: Map<string, number>,
  after: Map<string, number>,
): AppendBreakdown {
  const since = (series: string) => (after.get(series) ?? 0) - (before.get(series) ?? 0);
  const requests = since('creditlab_append_seconds_count');
  const mean = (series: string) => since(series) / requests;
  const phases = Object.fromEntries(
    APPEND_PHASES.map((p) => [p, mean(`creditlab_append_phase_seconds_sum{phase="${p}"}`)]),
  ) as Record<AppendPhase, number>;
  return {
    requests,
    phases,
    append: mean('creditlab_append_seconds_sum'),
    http:
      since(`creditlab_http_request_seconds_sum{${EVENTS_ROUTE}}`) /
      since(`creditlab_http_request_seconds_count{${EVENTS_ROUTE}}`),
  };
}
