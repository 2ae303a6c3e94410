import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { fetchEvents } from '../../api/run-api';
import { useCaps } from '../../app/use-caps';
import { when } from '../../components/format';
import { Failure, Loading } from '../../components/Status';
import { Pager } from '../../components/Pager';

const TYPES = [
  'RUN_CREATED',
  'ROLLOUTS_APPENDED',
  'STEPS_APPENDED',
  'TRAJECTORY_FINISHED',
  'ADVANTAGES_USED',
  'METRICS_LOGGED',
  'EVALUATION_LOGGED',
  'CHECKPOINT_SAVED',
  'RUN_FINISHED',
  'RUN_RESUMED',
];

/** The run's event stream, 50 at a time, optionally of one type. */
export function EventLog({ runId }: { runId: string }) {
  const caps = useCaps();
  const [cursors, setCursors] = useState<(string | number | null)[]>([null]);
  const [type, setType] = useState('');
  const events = useQuery({
    queryKey: ['events', runId, type, cursors.at(-1)],
    queryFn: () => fetchEvents(caps!, runId, cursors.at(-1) ?? null, type ? [type] : []),
    enabled: !!caps,
    placeholderData: keepPreviousData,
  });
  return (
    <div>
      <h2>Event log</h2>
      {caps?.hasType('EventType') && (
        <label>
          Type{' '}
          <select value={type} onChange={(e) => (setType(e.target.value), setCursors([null]))}>
            <option value="">all</option>
            {TYPES.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </label>
      )}
      {events.isPending && <Loading what="events" />}
      {events.isError && <Failure error={events.error} />}
      {events.data && (
        <>
          <table className="grid events" data-testid="events-table">
            <thead>
              <tr>
                <th className="num">Seq</th>
                <th>Type</th>
                <th className="num">Iteration</th>
                <th className="num">Steps</th>
                <th>Recorded</th>
                <th>Data</th>
              </tr>
            </thead>
            <tbody>
              {events.data.nodes.map((e) => (
                <tr key={e.seq}>
                  <td className="num">{e.seq}</td>
                  <td>{e.type}</td>
                  <td className="num">{e.iteration ?? '–'}</td>
                  <td className="num">{e.stepCount}</td>
                  <td>{when(e.recordedAt)}</td>
                  <td>
                    <code className="clip">{JSON.stringify(e.data).slice(0, 160)}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <Pager cursors={cursors} setCursors={setCursors} pageInfo={events.data.pageInfo} />
        </>
      )}
    </div>
  );
}
