import { signedColour } from '@creditlab/charts';
import { useQuery } from '@tanstack/react-query';
import { useEffect, useMemo, useState } from 'react';
import { fetchEstimators } from '../../api/estimators-api';
import type { GroupView, TrajectoryStep, TrajectoryView } from '../../api/trajectory-api';
import type { Estimator, MethodInput } from '../../api/types';
import { fmt, methodLabel } from '../../components/format';
import { MethodName } from '../../components/MethodName';
import { DiagnosticsCard } from './DiagnosticsCard';

interface Props {
  group: GroupView;
  methods: MethodInput[];
  focus: { trajectory: string | null; step: number | null };
}

/** A state's number in the group (order of first appearance) and how many steps are in it. */
interface StateTag {
  id: number;
  count: number;
}

function stateTags(group: GroupView): Map<string, StateTag> {
  const tags = new Map<string, StateTag>();
  for (const t of group.trajectories)
    for (const s of t.steps) {
      const tag = tags.get(s.state) ?? { id: tags.size + 1, count: 0 };
      tag.count++;
      tags.set(s.state, tag);
    }
  return tags;
}

export interface Hover {
  trajectory: string;
  step: number;
  method: number;
}

/**
 * The group's trajectories one under another, a row per step. Each method's advantages are coloured
 * on that method's own scale (its largest |A| in the group), so methods of different magnitudes read
 * alike. Hovering a step marks every step of the group in the same state (the anchor states
 * step-level methods group on) and shows the method's diagnostics for it.
 */
export function GroupTable({ group, methods, focus }: Props) {
  const estimators = useQuery({ queryKey: ['estimators'], queryFn: fetchEstimators });
  const [hover, setHover] = useState<Hover | null>(null);
  const [hoverState, setHoverState] = useState<string | null>(null);
  const scales = useMemo(
    () =>
      methods.map((_, i) =>
        Math.max(
          1e-12,
          ...group.trajectories.flatMap((t) => t.steps.map((s) => Math.abs(s.advantages[i] ?? 0))),
        ),
      ),
    [group, methods],
  );
  const tags = useMemo(() => stateTags(group), [group]);
  const successes = group.trajectories.filter((t) => t.outcome.toLowerCase() === 'success').length;
  useEffect(() => {
    document.querySelector('.focus-row')?.scrollIntoView({ block: 'center' });
  }, [group]);
  return (
    <div className="group" data-testid="group-view">
      <p className="muted">
        {group.trajectories.length} trajectories, {successes} succeeded. Colour: blue credit, red
        blame, per method scaled to its largest |advantage| in this group. Hover a step for the
        method's diagnostics and the steps sharing its state; s3 ×4 beside a step: the group's third
        distinct state, in which 4 steps are (the anchor states step-level methods group on).
      </p>
      {group.trajectories.map((t) => (
        <TrajectoryTable
          key={t.id}
          trajectory={t}
          methods={methods}
          scales={scales}
          estimators={estimators.data ?? []}
          focus={focus}
          tags={tags}
          hover={hover}
          hoverState={hoverState}
          onHover={(h, state) => (setHover(h), setHoverState(state))}
        />
      ))}
    </div>
  );
}

interface TableProps {
  trajectory: TrajectoryView;
  methods: MethodInput[];
  scales: number[];
  estimators: Estimator[];
  focus: Props['focus'];
  tags: Map<string, StateTag>;
  hover: Hover | null;
  hoverState: string | null;
  onHover(h: Hover | null, state: string | null): void;
}

function TrajectoryTable({
  trajectory: t,
  methods,
  scales,
  estimators,
  focus,
  tags,
  hover,
  hoverState,
  onHover,
}: TableProps) {
  const outcome = t.outcome.toLowerCase();
  return (
    <div className="trajectory-card" data-testid="trajectory" data-trajectory-id={t.id}>
      <h3>
        <code>{t.id}</code> <span className={`outcome outcome-${outcome}`}>{outcome}</span>
        <span className="muted small">
          {' '}
          return {fmt(t.return)} · {t.length} steps
        </span>
      </h3>
      <table className="grid steps">
        <thead>
          <tr>
            <th className="num">Step</th>
            <th>State</th>
            <th>Action</th>
            <th className="num">Reward</th>
            <th>Outcome</th>
            {methods.map((m, i) => (
              <th key={i} className="num">
                <MethodName name={m.name} label={methodLabel(m)} />
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {t.steps.map((s) => (
            <StepRow
              key={s.index}
              t={t}
              s={s}
              outcome={outcome}
              methods={methods}
              scales={scales}
              estimators={estimators}
              focused={focus.trajectory === t.id && focus.step === s.index}
              tag={tags.get(s.state)!}
              hover={hover}
              sameState={hoverState === s.state}
              onHover={onHover}
            />
          ))}
        </tbody>
      </table>
    </div>
  );
}

interface RowProps {
  t: TrajectoryView;
  s: TrajectoryStep;
  outcome: string;
  methods: MethodInput[];
  scales: number[];
  estimators: Estimator[];
  focused: boolean;
  tag: StateTag;
  hover: Hover | null;
  sameState: boolean;
  onHover(h: Hover | null, state: string | null): void;
}

function StepRow({
  t,
  s,
  outcome,
  methods,
  scales,
  estimators,
  focused,
  tag,
  hover,
  sameState,
  onHover,
}: RowProps) {
  const last = s.index === t.steps.at(-1)?.index;
  const classes = [focused ? 'focus-row' : '', sameState ? 'same-state' : ''].join(' ');
  return (
    <tr
      className={classes}
      data-testid="step-row"
      data-step={s.index}
      onMouseLeave={() => onHover(null, null)}
    >
      <td className="num">
        {s.index}
        <span
          className={tag.count > 1 ? 'state-tag shared' : 'state-tag'}
          title={`the group's state ${tag.id}: ${tag.count} step${tag.count > 1 ? 's are' : ' is'} in it`}
        >
          s{tag.id}
          {tag.count > 1 && ` ×${tag.count}`}
        </span>
      </td>
      <td className="state" onMouseEnter={() => onHover(null, s.state)}>
        <pre>{s.state}</pre>
      </td>
      <td className="action">{s.action}</td>
      <td className="num">{fmt(s.reward)}</td>
      <td>{last ? <span className={`outcome outcome-${outcome}`}>{outcome}</span> : ''}</td>
      {methods.map((m, i) => {
        const v = s.advantages[i] ?? 0;
        const open = hover?.trajectory === t.id && hover.step === s.index && hover.method === i;
        return (
          <td
            key={i}
            className="num adv"
            tabIndex={0}
            data-testid="adv-cell"
            data-method={m.name}
            data-value={v}
            style={{
              background: signedColour(v, scales[i] ?? 1),
              color: Math.abs(v) > 0.6 * (scales[i] ?? 1) ? 'white' : undefined,
            }}
            onMouseEnter={() => onHover({ trajectory: t.id, step: s.index, method: i }, s.state)}
            onFocus={() => onHover({ trajectory: t.id, step: s.index, method: i }, s.state)}
            onBlur={() => onHover(null, null)}
          >
            {fmt(v)}
            {open && (
              <DiagnosticsCard
                method={m}
                value={v}
                diagnostics={s.diagnostics[i] ?? null}
                estimator={estimators.find((e) => e.name === m.name)}
              />
            )}
          </td>
        );
      })}
    </tr>
  );
}
