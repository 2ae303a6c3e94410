/**
 * The phases of an append request, in the order a request meets them. A request's wall time in the
 * appender, from the start of reading its body to its commit, is split among them with nothing left
 * over and nothing counted twice: the request's path is one chain of awaits, and each phase is the
 * stretch of that chain since the one before ended. Work that overlaps a phase (PostgreSQL writing
 * one chunk while the next is projected, the first event checked while the run's lock is taken)
 * counts where the request was waiting.
 */
export const APPEND_PHASES = [
  /** Waiting for events and checking them: the body's bytes, JSON, validation (here or on the preparing thread). */
  'read',
  /** Waiting for a connection of the ingest pool (more appenders than connections wait here). */
  'connect',
  /**
   * BEGIN and the run's row lock (appenders to one run take turns here), with the first event's
   * duplicate check and texts' lookup, which go in the same message (first-event-lookup.ts).
   */
  'lock',
  /**
   * Looking up which of a chunk's event ids (and texts) are stored already, those not asked with the
   * lock (after the first chunk, on the main pool).
   */
  'check',
  /** Projecting a chunk into rows (its lookups of stored rollouts queue behind the writes). */
  'project',
  /** Waiting for a chunk's writes (texts, steps, iterations, the log) to finish. */
  'write',
  /**
   * Packing for recompute, at the end, the iterations still in hand (CREDITLAB_PACK_ITERATIONS=on-append):
   * the last chunk's, on the preparing thread, while its COPYs are written.
   */
  'pack',
  /**
   * The request's last writes: the last chunk's COPYs and statement, with the groups and
   * trajectories, the run's summary, the notice to its subscribers and, when nothing follows, COMMIT.
   */
  'rollouts',
  /** Rows the server adds to the request (a checkpoint's bytes) and COMMIT; else nothing is left. */
  'commit',
] as const;

export type AppendPhase = (typeof APPEND_PHASES)[number];

/** Where one append request's time went (creditlab_append_phase_seconds). */
export class AppendClock {
  private last: number;
  private readonly spent = Object.fromEntries(APPEND_PHASES.map((p) => [p, 0])) as Record<
    AppendPhase,
    number
  >;

  /** `now` gives milliseconds (a test gives its own clock). */
  constructor(private readonly now: () => number = () => performance.now()) {
    this.last = now();
  }

  /** Counts the time since the last lap (or the clock's start) as `phase`'s. */
  lap(phase: AppendPhase): void {
    const now = this.now();
    this.spent[phase] += now - this.last;
    this.last = now;
  }

  /** Seconds per phase, every phase (0 for one the request did not meet). */
  seconds(): [AppendPhase, number][] {
    return APPEND_PHASES.map((phase) => [phase, this.spent[phase] / 1000]);
  }
}
