import type { MetricCurves } from '../../api/run-api';

/**
 * A run's name in the legend and tooltip: its name, with its method unless the name holds it (the
 * trainer's names start with it), and the start of its id when another drawn run has the same name,
 * since a legend entry shows and hides every series of its name.
 */
export function seriesName(c: MetricCurves, method: string, all: MetricCurves[]): string {
  const name = c.runName.includes(method) ? c.runName : `${c.runName} (${method})`;
  return all.some((o) => o.runId !== c.runId && o.runName === c.runName)
    ? `${name} · ${c.runId.slice(0, 8)}`
    : name;
}
