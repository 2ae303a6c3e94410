import { APPEND_PHASES, type AppendPhase } from '../../apps/server/src/rollouts/append-clock';

/**
 * A server's /metrics, series by series: `name{labels}` as Prometheus writes it → its value. The
 * value is the line's last field: prom-client writes no timestamps, and `Number` reads its `NaN`
 * (though not `+Inf`, which no series read here holds).
 */
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

/**
 * Where the append requests between two scrapes spent their time, in seconds per request (NaN when
 * there were none). Each mean is over the requests its metric counts: the phases over the accepted
 * appends, the appender over all appends, HTTP over the answers 200 of the events route; the
 * benchmarks send no request that is refused, so the three are the same requests there.
 */
export interface AppendBreakdown {
  /** Accepted append requests. */
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
  const mean = (sum: string, count: string) => {
    const n = since(count);
    return n > 0 ? since(sum) / n : Number.NaN;
  };
  const phase = (p: string, what: 'sum' | 'count') =>
    `creditlab_append_phase_seconds_${what}{phase="${p}"}`;
  const phases = Object.fromEntries(
    APPEND_PHASES.map((p) => [p, mean(phase(p, 'sum'), phase(p, 'count'))]),
  ) as Record<AppendPhase, number>;
  return {
    requests: since(phase(APPEND_PHASES[0], 'count')),
    phases,
    append: mean('creditlab_append_seconds_sum', 'creditlab_append_seconds_count'),
    http: mean(
      `creditlab_http_request_seconds_sum{${EVENTS_ROUTE}}`,
      `creditlab_http_request_seconds_count{${EVENTS_ROUTE}}`,
    ),
  };
}
