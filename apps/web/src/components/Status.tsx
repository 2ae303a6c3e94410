import { ApiError } from '../api/graphql';

/** Loading and error states, said in words (and an id tests can wait for). */
export function Loading({ what }: { what: string }) {
  return (
    <p className="muted" role="status">
      Loading {what}…
    </p>
  );
}

export function Failure({ error }: { error: unknown }) {
  const message =
    error instanceof ApiError || error instanceof Error ? error.message : String(error);
  return (
    <p className="error" role="alert">
      {message}
    </p>
  );
}

/** A run's status as a coloured pill; a running run pulses (the live indicator). */
export function StatusPill({ status }: { status: string }) {
  const s = status.toLowerCase();
  return (
    <span
      className={`status status-${s}`}
      data-testid="run-status"
      title={s === 'running' ? 'running: updates live' : s}
    >
      {s === 'running' && <span className="live-dot" aria-hidden />}
      {s}
    </span>
  );
}
