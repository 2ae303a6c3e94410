import { densityOption, histogramOption } from '@creditlab/charts';
import { useState } from 'react';
import type { Comparison } from '../../api/compare-api';
import type { MethodInput, RunDetail } from '../../api/types';
import { Chart } from '../../components/Chart';
import { fmt, pct } from '../../components/format';
import { MethodName } from '../../components/MethodName';
import { Disagreements } from './Disagreements';
import { methodSide, pairSides } from './pair-sides';

interface Props {
  run: RunDetail;
  methods: MethodInput[];
  comparison: Comparison;
}

const STATS = ['mean', 'std', 'min', 'p05', 'p25', 'p50', 'p75', 'p95', 'max'] as const;

export function CompareResults({ run, methods, comparison }: Props) {
  const [pairIndex, setPairIndex] = useState(0);
  const allZero =
    comparison.stepCount > 0 && comparison.methods.every((m) => m.summary.fractionZero === 1);
  const pair = comparison.pairs[pairIndex];
  const sides = pair && pairSides(pair, comparison, methods);
  // Each compared method by the method asked for (its colour) and its label with parameters.
  const nameOf = (i: number) => {
    const side = methodSide(i, comparison, methods);
    return { name: side.method, label: side.label };
  };
  return (
    <div className="results">
      <p data-testid="compare-scope">
        {comparison.stepCount.toLocaleString('en')} steps in iteration
        {comparison.iterations.length === 1 ? '' : 's'} {comparison.iterations.join(', ')}
      </p>
      {allZero && (
        <p className="muted small" data-testid="compare-all-zero">
          Every method gives 0 on every step compared, as when every trajectory of each task group
          ended the same way: nothing to tell apart here. Other iterations of the run may differ.
        </p>
      )}
      <h2>Summary</h2>
      <table className="grid" data-testid="summary-table">
        <thead>
          <tr>
            <th>Method</th>
            {STATS.map((s) => (
              <th key={s} className="num">
                {s}
              </th>
            ))}
            <th className="num">positive</th>
            <th className="num">zero</th>
            <th>Rates</th>
          </tr>
        </thead>
        <tbody>
          {comparison.methods.map((m, i) => (
            <tr key={i}>
              <td>
                <MethodName {...nameOf(i)} />
              </td>
              {STATS.map((s) => (
                <td key={s} className="num">
                  {fmt(m.summary[s])}
                </td>
              ))}
              <td className="num">{pct(m.summary.fractionPositive)}</td>
              <td className="num">{pct(m.summary.fractionZero)}</td>
              <td className="small">{rates(m.rates)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Distributions</h2>
      <p className="muted small">
        Advantage histograms,{' '}
        {comparison.serverBinned
          ? '40 bins computed on the server'
          : '40 bins (computed in the browser: this server does not bin)'}
        .
      </p>
      <div className="histograms" data-testid="histograms">
        {comparison.methods.map((m, i) => (
          <Chart
            key={i}
            height={220}
            label={`histogram of ${nameOf(i).label} advantages`}
            testId={`histogram-${i}`}
            seriesCount={1}
            option={histogramOption({
              method: nameOf(i).name,
              title: nameOf(i).label,
              edges: m.histogram.edges,
              counts: m.histogram.counts,
            })}
          />
        ))}
      </div>
      {comparison.pairs.length > 0 && (
        <>
          <h2>Pairs</h2>
          <table className="grid" data-testid="pairs-table">
            <thead>
              <tr>
                <th>Pair</th>
                <th className="num">Pearson</th>
                <th className="num">Spearman</th>
                <th
                  className="num"
                  title="Mean over task groups of the within-group Pearson correlation"
                >
                  Within-group Pearson
                </th>
                <th className="num" title="Over the steps where both are nonzero">
                  Same sign
                </th>
                <th />
              </tr>
            </thead>
            <tbody>
              {comparison.pairs.map((p, i) => {
                const [a, b] = pairSides(p, comparison, methods);
                return (
                  <tr key={i} className={i === pairIndex ? 'selected' : ''}>
                    <td>
                      <MethodName name={a.method} label={a.label} /> vs{' '}
                      <MethodName name={b.method} label={b.label} />
                    </td>
                    <td className="num">{p.pearson === null ? '–' : p.pearson.toFixed(3)}</td>
                    <td className="num">{p.spearman === null ? '–' : p.spearman.toFixed(3)}</td>
                    <td className="num">{corr(p.groupPearson)}</td>
                    <td className="num">{pct(p.signAgreement)}</td>
                    <td>
                      <button type="button" className="link" onClick={() => setPairIndex(i)}>
                        show
                      </button>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          {pair && sides && (
            <Chart
              height={420}
              label={`density of ${sides[0].label} against ${sides[1].label}`}
              testId="density"
              seriesCount={1}
              option={densityOption({
                a: sides[0].label,
                b: sides[1].label,
                ...pair.density,
                pearson: pair.pearson,
                spearman: pair.spearman,
                binnedOn: comparison.serverBinned ? 'server' : 'browser',
              })}
            />
          )}
        </>
      )}
      <AgainstReferenceTable comparison={comparison} methods={methods} />
      {pair && !allZero && (
        <Disagreements run={run} methods={methods} comparison={comparison} pair={pair} />
      )}
    </div>
  );
}

const corr = (v: number | null | undefined) => (v === null || v === undefined ? '–' : v.toFixed(3));

/** A method's own figures, by name, so that those two methods share read in one order. */
function rates(r: Record<string, unknown>): string {
  return Object.entries(r)
    .filter(([, v]) => typeof v === 'number')
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k} ${fmt(v as number)}`)
    .join(' · ');
}

function AgainstReferenceTable({
  comparison,
  methods,
}: {
  comparison: Comparison;
  methods: MethodInput[];
}) {
  if (!comparison.againstReference.length) return null;
  return (
    <>
      <h2>Agreement with the exact advantage</h2>
      <p className="muted small">
        Each method against the true advantage the trainer logged per step (field{' '}
        {comparison.againstReference[0]!.field}).
      </p>
      <table className="grid" data-testid="reference-table">
        <thead>
          <tr>
            <th>Method</th>
            <th className="num">Steps</th>
            <th className="num">Pearson</th>
            <th className="num">Spearman</th>
            <th className="num">Within-group Pearson</th>
            <th className="num" title="Over the steps where both are nonzero">
              Same sign
            </th>
            <th className="num">Truth exactly 0</th>
          </tr>
        </thead>
        <tbody>
          {comparison.againstReference.map((a, i) => {
            const side = methodSide(a.methodIndex, comparison, methods);
            return (
              <tr key={i}>
                <td>
                  <MethodName name={side.method} label={side.label} />
                </td>
                <td className="num">{a.steps}</td>
                <td className="num">{a.pearson === null ? '–' : a.pearson.toFixed(3)}</td>
                <td className="num">{a.spearman === null ? '–' : a.spearman.toFixed(3)}</td>
                <td className="num">{corr(a.groupPearson)}</td>
                <td className="num">{pct(a.signAgreement)}</td>
                <td className="num">{pct(a.zeroFractionB)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </>
  );
}
