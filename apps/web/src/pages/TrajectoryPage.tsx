import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { fetchEstimators } from '../api/estimators-api';
import { fetchRun } from '../api/run-api';
import {
  fetchGroup,
  fetchGroupOutlines,
  firstMixedGroup,
  isMixedGroup,
} from '../api/trajectory-api';
import type { MethodInput } from '../api/types';
import { useCaps } from '../app/use-caps';
import { useUrlParams } from '../app/use-url-params';
import { methodLabel, methodsParam, parseMethods } from '../components/format';
import { MethodName } from '../components/MethodName';
import { Failure, Loading } from '../components/Status';
import { GroupTable } from './trajectory/GroupTable';

/**
 * A task group's G trajectories, step by step, with each chosen method's advantage beside every step:
 * where the methods put credit and blame, and why (diagnostics on hover).
 */
export function TrajectoryPage() {
  const { runId = '', iteration = '0', groupId = '' } = useParams();
  const it = Number(iteration);
  const validIteration = /^\d+$/.test(iteration) && Number.isSafeInteger(it);
  const caps = useCaps();
  const [params, updateParams] = useUrlParams();
  const navigate = useNavigate();
  const run = useQuery({
    queryKey: ['run', runId],
    queryFn: () => fetchRun(caps!, runId),
    enabled: !!caps,
  });
  const outlines = useQuery({
    queryKey: ['group-outlines', runId, it],
    queryFn: () => fetchGroupOutlines(runId, it),
    enabled: validIteration,
  });
  const ids = outlines.data?.groups.map((g) => g.id);
  const picked = parseMethods(params.get('m'));
  const methods: MethodInput[] = picked.length
    ? picked
    : run.data
      ? [...new Set([run.data.method, 'grpo', 'gigpo'])].map((name) => ({ name }))
      : [];
  const gid = groupId || (outlines.data && firstMixedGroup(outlines.data.groups)) || '';
  const group = useQuery({
    queryKey: ['group', runId, it, gid, JSON.stringify(methods)],
    queryFn: () => fetchGroup(caps!, runId, it, gid, methods),
    enabled: !!caps && !!gid && methods.length > 0,
  });
  const setMethods = (m: MethodInput[]) => {
    updateParams((next) => next.set('m', methodsParam(m)), 'push');
  };
  const position = ids?.indexOf(gid) ?? -1;
  // Another group of the iteration, with the methods and focus of the address kept.
  const open = (group: string) =>
    void navigate(
      `/runs/${runId}/iterations/${it}/groups/${encodeURIComponent(group)}${window.location.search}`,
    );
  const go = (d: number) => {
    const next = ids?.[position + d];
    if (next) open(next);
  };
  if (run.isError) return <Failure error={run.error} />;
  // Each of these had left the page on "Loading the group…" for good: the group's query never ran.
  if (!validIteration) return <Failure error={`"${iteration}" is not an iteration number`} />;
  return (
    <section className="trajectory">
      <h1>
        {run.data ? <Link to={`/runs/${runId}`}>{run.data.name}</Link> : '…'} · iteration {it} ·
        group <code data-testid="group-id">{gid || '…'}</code>
      </h1>
      <div className="group-nav">
        <button type="button" disabled={position <= 0} onClick={() => go(-1)}>
          ← previous group
        </button>
        {outlines.data && outlines.data.groups.length > 0 && (
          <select aria-label="Group" value={gid} onChange={(e) => open(e.target.value)}>
            {outlines.data.groups.map((g, k) => (
              <option key={g.id} value={g.id}>
                {`${k + 1}. ${g.id} · ${g.successes}/${g.trajectories} succeeded`}
              </option>
            ))}
          </select>
        )}
        <span className="muted" data-testid="group-position">
          {outlines.data
            ? `group ${position + 1} of ${outlines.data.groups.length}${outlines.data.more ? '+' : ''}`
            : ''}
        </span>
        <button
          type="button"
          disabled={!ids || position < 0 || position >= ids.length - 1}
          onClick={() => go(1)}
        >
          next group →
        </button>
        <Link to={`/runs/${runId}/compare?m=${encodeURIComponent(methodsParam(methods))}&it=${it}`}>
          compare these methods on iteration {it}
        </Link>
      </div>
      <MethodChips methods={methods} onChange={setMethods} />
      {(outlines.isPending || (gid !== '' && group.isPending)) && <Loading what="the group" />}
      {outlines.isError && <Failure error={outlines.error} />}
      {ids?.length === 0 && <Failure error={`iteration ${it} has no rollouts`} />}
      {!groupId && gid && outlines.data && (
        <p className="muted small" data-testid="group-chosen">
          {isMixedGroup(outlines.data.groups.find((g) => g.id === gid))
            ? 'Opened the first group whose trajectories ended differently: a group all of one outcome gets no credit from the group-relative methods.'
            : 'Every group of this iteration ended one way (all succeeded or all failed): opened the first.'}{' '}
          Pick any group above.
        </p>
      )}
      {group.isError && <Failure error={group.error} />}
      {group.data === null && ids?.length !== 0 && (
        <Failure error={`no group ${gid} in iteration ${it}`} />
      )}
      {group.data && (
        <GroupTable
          group={group.data}
          methods={methods}
          focus={{
            trajectory: params.get('t'),
            step: params.get('s') === null ? null : Number(params.get('s')),
          }}
        />
      )}
    </section>
  );
}

function MethodChips({
  methods,
  onChange,
}: {
  methods: MethodInput[];
  onChange(m: MethodInput[]): void;
}) {
  const estimators = useQuery({ queryKey: ['estimators'], queryFn: fetchEstimators });
  const [adding, setAdding] = useState('');
  return (
    <div className="chips" aria-label="Methods shown">
      Methods:{' '}
      {methods.map((m, i) => (
        <button
          key={i}
          type="button"
          className="chip"
          title="remove"
          disabled={methods.length < 2}
          onClick={() => onChange(methods.filter((_, k) => k !== i))}
        >
          <MethodName name={m.name} label={methodLabel(m)} /> ×
        </button>
      ))}
      <select
        value={adding}
        aria-label="Add a method"
        onChange={(e) => (
          e.target.value && onChange([...methods, { name: e.target.value }]),
          setAdding('')
        )}
      >
        <option value="">add a method…</option>
        {estimators.data?.map((e) => (
          <option key={e.name}>{e.name}</option>
        ))}
      </select>
    </div>
  );
}
