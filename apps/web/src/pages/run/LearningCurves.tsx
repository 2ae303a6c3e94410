import { lineChartOption, MAX_SMOOTHING, smoothingFrom, type CurveSeries } from '@creditlab/charts';
import { useQuery } from '@tanstack/react-query';
import { useEffect, useMemo, useState } from 'react';
import { fetchCurves, fetchRunRows, searchRuns, type MetricCurves } from '../../api/run-api';
import type { RunDetail, RunRow } from '../../api/types';
import { useCaps } from '../../app/use-caps';
import { useUrlParams } from '../../app/use-url-params';
import { Chart } from '../../components/Chart';
import { MethodName } from '../../components/MethodName';
import { Failure, Loading } from '../../components/Status';
import { seriesName } from './series-name';

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

/** What a curve needs of a run: its id, and its method for the colour. */
type CurveRun = Pick<RunRow, 'id' | 'name' | 'method'>;

/**
 * A chart per metric over iterations: this run, its parent, forks and retrains, and runs the user picks,
 * each in its method's colour (the run itself solid, the others dashed, dotted, … so that runs of
 * one method differ), smoothed as the user sets. The picked runs (`with`), the smoothing (`smooth`)
 * and hiding the lineage (`lineage=0`) are kept in the address, so a view can be shared or come back to.
 */
export function LearningCurves({ run }: { run: RunDetail }) {
  const caps = useCaps();
  const [params, updateParams] = useUrlParams();
  const withLineage = params.get('lineage') !== '0';
  const lineage = useMemo(
    () => [...(run.parent ? [run.parent] : []), ...(run.children ?? [])],
    [run],
  );
  const smoothing = smoothingFrom(params.get('smooth'));
  // The address says what is drawn: a smoothing out of range or unreadable is written as applied.
  const smoothText = params.get('smooth');
  useEffect(() => {
    if (smoothText === null || smoothText === String(smoothing)) return;
    updateParams((next) =>
      smoothing > 0 ? next.set('smooth', String(smoothing)) : next.delete('smooth'),
    );
  }, [smoothText, smoothing, updateParams]);
  const pickedIds = useMemo(
    () => [...new Set((params.get('with') ?? '').split(','))].filter((id) => id && id !== run.id),
    [params, run.id],
  );
  const picked = useQuery({
    queryKey: ['run-rows', ...pickedIds],
    queryFn: () => fetchRunRows(pickedIds),
    enabled: pickedIds.length > 0,
  });
  const pickedRows = useMemo(() => picked.data ?? [], [picked.data]);
  const setPicked = (ids: string[]) =>
    updateParams(
      (next) => (ids.length ? next.set('with', ids.join(',')) : next.delete('with')),
      'push',
    );
  const runs = useMemo(() => {
    const list: CurveRun[] = [run, ...(withLineage ? lineage : []), ...pickedRows];
    return [...new Map(list.map((r) => [r.id, r])).values()].slice(0, 20);
  }, [run, lineage, withLineage, pickedRows]);
  const ids = runs.map((r) => r.id);
  const curves = useQuery({
    queryKey: ['curves', run.id, ...ids],
    queryFn: () => fetchCurves(caps!, ids),
    enabled: !!caps,
  });
  const missing = picked.data ? pickedIds.filter((id) => !pickedRows.some((r) => r.id === id)) : [];
  return (
    <div>
      <h2>Learning curves</h2>
      <div className="overlay-controls">
        {lineage.length > 0 && (
          <label>
            <input
              type="checkbox"
              checked={withLineage}
              onChange={(e) =>
                updateParams(
                  (next) => (e.target.checked ? next.delete('lineage') : next.set('lineage', '0')),
                  'push',
                )
              }
            />{' '}
            {run.parent ? 'parent, forks and retrains' : 'forks and retrains'}
          </label>
        )}
        <label
          className="smoothing"
          title="exponential moving average, as TensorBoard and W&B smooth"
        >
          smoothing{' '}
          <SmoothingSlider
            value={smoothing}
            onChange={(v) =>
              updateParams((next) =>
                v > 0 ? next.set('smooth', String(v)) : next.delete('smooth'),
              )
            }
          />
        </label>
        <RunPicker drawn={ids} onPick={(r) => setPicked([...new Set([...pickedIds, r.id])])} />
        {pickedRows.map((r) => (
          <button
            key={r.id}
            type="button"
            className="chip"
            onClick={() => setPicked(pickedIds.filter((id) => id !== r.id))}
            title="remove"
          >
            <MethodName name={r.method} label={r.name} />
            {curves.data?.find((c) => c.runId === r.id)?.series.size === 0 && (
              <span className="muted" data-testid="overlay-no-metrics">
                {' '}
                (no metrics logged)
              </span>
            )}{' '}
            ×
          </button>
        ))}
        {missing.length > 0 && (
          <span className="muted" data-testid="missing-overlays">
            not found: {missing.join(', ')}{' '}
            <button
              type="button"
              className="link"
              onClick={() => setPicked(pickedRows.map((r) => r.id))}
            >
              forget
            </button>
          </span>
        )}
      </div>
      {picked.isError && <Failure error={picked.error} />}
      {curves.isPending && <Loading what="curves" />}
      {curves.isError && <Failure error={curves.error} />}
      {curves.data && (
        <CurveCharts mainId={run.id} runs={runs} curves={curves.data} smoothing={smoothing} />
      )}
    </div>
  );
}

function CurveCharts({
  mainId,
  runs,
  curves,
  smoothing,
}: {
  mainId: string;
  runs: CurveRun[];
  curves: MetricCurves[];
  smoothing: number;
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
              name: seriesName(c, method, curves),
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
              smoothing,
            })}
          />
        );
      })}
    </div>
  );
}

/**
 * The slider keeps its own value while it moves, and the address follows: fed from the address
 * alone, it lost the key presses that came before the router's next render (ten quick presses of
 * the right arrow moved it by 0.02). It takes a value from the address (Back, Forward, an address
 * opened) only once the address bar says the same: the router renders behind the bar, so a render of
 * an earlier press's value, arriving after later presses, would pull the slider back and lose them.
 */
function SmoothingSlider({ value, onChange }: { value: number; onChange(v: number): void }) {
  const [shown, setShown] = useState(value);
  useEffect(() => {
    const settled = smoothingFrom(new URLSearchParams(window.location.search).get('smooth'));
    if (value === settled) setShown(value);
  }, [value]);
  return (
    <>
      <input
        type="range"
        min={0}
        max={MAX_SMOOTHING}
        step={0.01}
        value={shown}
        aria-label="Smoothing"
        onChange={(e) => {
          const v = Number(e.target.value);
          setShown(v);
          onChange(v);
        }}
      />{' '}
      <output data-testid="smoothing">{shown.toFixed(2)}</output>
    </>
  );
}

function RunPicker({ drawn, onPick }: { drawn: string[]; onPick(r: RunRow): void }) {
  const caps = useCaps();
  const [text, setText] = useState('');
  const found = useQuery({
    queryKey: ['pick', text],
    queryFn: () => searchRuns(caps!, text),
    enabled: !!caps && text.length >= 2,
  });
  // Not the runs already drawn (this one among them): picking one changed nothing.
  const offered = found.data?.filter((r) => !drawn.includes(r.id));
  return (
    <span className="picker">
      <input
        type="search"
        placeholder="overlay a run: name or id"
        value={text}
        onChange={(e) => setText(e.target.value)}
        aria-label="Overlay another run"
      />
      {text.length >= 2 && offered && (
        <ul className="dropdown">
          {offered.slice(0, 10).map((r) => (
            <li key={r.id}>
              <button type="button" className="link" onClick={() => (onPick(r), setText(''))}>
                <MethodName name={r.method} label={r.name} />
              </button>
            </li>
          ))}
          {!offered.length && <li className="muted">no match</li>}
        </ul>
      )}
    </span>
  );
}
