import { lineChartOption, type CurveSeries } from '@creditlab/charts';
import { useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { fetchCurves, searchRuns, type MetricCurves } from '../../api/run-api';
import type { RunDetail, RunRow } from '../../api/types';
import { useCaps } from '../../app/use-caps';
import { Chart } from '../../components/Chart';
import { MethodName } from '../../components/MethodName';
import { Failure, Loading } from '../../components/Status';

const TITLES: Record<string, string> = {
  successRate: 'Training success',
  'evaluation.successRate': 'Held-out success',
};

/** Training success, held-out success, then every other metric by name. */
export function metricOrder(names: Iterable<string>): string[] {
  const rest = [...new Set(names)].filter((n) => !(n in TITLES)).sort();
  return [...Object.keys(TITLES).filter((n) => [...names].includes(n)), ...rest];
}

const isFraction = (name: string) => name === 'successRate' || name.endsWith('.successRate');

/**
 * A chart per metric over iterations: this run, its forks and retrains, and runs the user picks,
 * each in its method's colour (the run itself solid, the others dashed, dotted, … so that runs of
 * one method differ).
 */
export function LearningCurves({ run }: { run: RunDetail }) {
  const caps = useCaps();
  const [withChildren, setWithChildren] = useState(true);
  const [picked, setPicked] = useState<RunRow[]>([]);
  const runs = useMemo(() => {
    const list: RunRow[] = [run, ...(withChildren ? (run.children ?? []) : []), ...picked];
    return [...new Map(list.map((r) => [r.id, r])).values()].slice(0, 20);
  }, [run, withChildren, picked]);
  const ids = runs.map((r) => r.id);
  const curves = useQuery({
    queryKey: ['curves', run.id, ...ids],
    queryFn: () => fetchCurves(caps!, ids),
    enabled: !!caps,
  });
  return (
    <div>
      <h2>Learning curves</h2>
      <div className="overlay-controls">
        {!!run.children?.length && (
          <label>
            <input
              type="checkbox"
              checked={withChildren}
              onChange={(e) => setWithChildren(e.target.checked)}
            />{' '}
            forks and retrains
          </label>
        )}
        <RunPicker onPick={(r) => setPicked((p) => [...p, r])} />
        {picked.map((r) => (
          <button
            key={r.id}
            type="button"
            className="chip"
            onClick={() => setPicked((p) => p.filter((x) => x.id !== r.id))}
            title="remove"
          >
            <MethodName name={r.method} label={r.name} /> ×
          </button>
        ))}
      </div>
      {curves.isPending && <Loading what="curves" />}
      {curves.isError && <Failure error={curves.error} />}
      {curves.data && <CurveCharts mainId={run.id} runs={runs} curves={curves.data} />}
    </div>
  );
}

function CurveCharts({
  mainId,
  runs,
  curves,
}: {
  mainId: string;
  runs: RunRow[];
  curves: MetricCurves[];
}) {
  const byId = new Map(runs.map((r) => [r.id, r]));
  const metrics = metricOrder(curves.flatMap((c) => [...c.series.keys()]));
  if (!metrics.length) return <p>No metrics logged yet.</p>;
  return (
    <div className="curves" data-testid="curves" data-metrics={metrics.length}>
      {metrics.map((m) => {
        // This run first; each other run of a method already drawn gets the next line pattern.
        const drawn = new Map<string, number>();
        const series: CurveSeries[] = [...curves]
          .filter((c) => c.series.has(m))
          .sort((a, b) => Number(b.runId === mainId) - Number(a.runId === mainId))
          .map((c) => {
            const method = byId.get(c.runId)?.method ?? '?';
            const variant = drawn.get(method) ?? (c.runId === mainId ? 0 : 1);
            drawn.set(method, variant + 1);
            return {
              name: `${c.runName} (${method})`,
              method,
              points: c.series.get(m)!,
              variant,
            };
          });
        return (
          <Chart
            key={m}
            label={`${TITLES[m] ?? m} per iteration`}
            testId={`curve-${m}`}
            seriesCount={series.length}
            option={lineChartOption({
              title: TITLES[m] ?? m,
              xName: 'iteration',
              yName: TITLES[m] ? 'success' : m,
              percent: isFraction(m),
              series,
            })}
          />
        );
      })}
    </div>
  );
}

function RunPicker({ onPick }: { onPick(r: RunRow): void }) {
  const caps = useCaps();
  const [text, setText] = useState('');
  const found = useQuery({
    queryKey: ['pick', text],
    queryFn: () => searchRuns(caps!, text),
    enabled: !!caps && text.length >= 2,
  });
  return (
    <span className="picker">
      <input
        type="search"
        placeholder="overlay a run: name or id"
        value={text}
        onChange={(e) => setText(e.target.value)}
        aria-label="Overlay another run"
      />
      {text.length >= 2 && found.data && (
        <ul className="dropdown">
          {found.data.slice(0, 10).map((r) => (
            <li key={r.id}>
              <button type="button" className="link" onClick={() => (onPick(r), setText(''))}>
                <MethodName name={r.method} label={r.name} />
              </button>
            </li>
          ))}
          {!found.data.length && <li className="muted">no match</li>}
        </ul>
      )}
    </span>
  );
}
