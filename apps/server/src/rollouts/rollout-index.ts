import { resolveOutcome, type Outcome } from '@creditlab/estimators';
import type pg from 'pg';
import type { CopyStep } from '../database/pipeline';
import { canonicalShape, type TrajectoryShape } from '../advantages/trajectory-shape';
import { BinaryCopyRows, uuidBytes } from './binary-copy-rows';

export interface TrajectoryState {
  iteration: number;
  key: string;
  groupKey: string;
  groupOrd: number;
  /** Position in its group (order of first appearance). */
  ord: number;
  stepCount: number;
  return: number;
  /** The outcome sent (with the trajectory or by trajectory.finished), if any. */
  outcomeGiven: Outcome | null;
  /** Its row exists (loaded), or an earlier `takeWrite` of this transaction writes it. */
  stored: boolean;
  /** Changed since its row was last written: `RolloutIndex.changed` lists it. */
  changed: boolean;
}

interface GroupState {
  iteration: number;
  key: string;
  ord: number;
  trajectoryCount: number;
  stored: boolean;
}

export interface RolloutRef {
  iteration: number;
  groupKey: string;
  trajectoryKey: string;
}

/**
 * The columns `takeWrite` copies many new groups and trajectories into (binary COPY, as the steps: no
 * array literal built on our side, none parsed on PostgreSQL's), and the statements that write a few
 * (INSERT_GROUPS_SQL below) or trajectories stored already that changed (a continuation, an outcome
 * given later): parameters are the run id, then one array per column after it. Exported for
 * bench:ingest-database, which measures each alone.
 */
export const GROUP_COLUMNS = ['run_id', 'iteration', 'ord', 'key'] as const;
export const TRAJECTORY_COLUMNS = [
  'run_id',
  'iteration',
  'group_ord',
  'ord',
  'key',
  'outcome',
  'outcome_given',
  'step_count',
  'return',
] as const;
const INSERT_TRAJECTORIES_SQL = `INSERT INTO trajectories (run_id, iteration, group_ord, ord, key, outcome, outcome_given, step_count, return)
  SELECT $1, * FROM unnest($2::int[], $3::int[], $4::int[], $5::text[], $6::text[], $7::bool[], $8::int[], $9::float8[])`;
/** The same for trajectories stored before (an upsert: a plain INSERT of new rows writes less WAL). */
export const UPSERT_TRAJECTORIES_SQL = `${INSERT_TRAJECTORIES_SQL}
  ON CONFLICT (run_id, iteration, group_ord, ord) DO UPDATE SET outcome = EXCLUDED.outcome,
    outcome_given = EXCLUDED.outcome_given, step_count = EXCLUDED.step_count, return = EXCLUDED.return`;

export const INSERT_GROUPS_SQL = `INSERT INTO rollout_groups (run_id, iteration, ord, key)
  SELECT $1, * FROM unnest($2::int[], $3::int[], $4::text[])`;

/**
 * New groups and trajectories up to this many rows are written by the statements above, with the
 * request's other rows; more go by binary COPY, which costs PostgreSQL less per row but more per
 * statement. Both ride in the request's pipeline (pipeline.ts), so neither costs a round trip of its
 * own. Measured: for a request of many iterations (bench:ingest, 300k steps as columns in 32 MiB
 * requests, two pairs) 197.7k and 206.3k steps/s by COPY against 191.3k and 197.7k by statements;
 * for one iteration of 16 groups and 128 trajectories (pg_stat_statements, 100 requests) the groups'
 * COPY took PostgreSQL 0.24 ms against 0.06 ms as part of the statement, the trajectories' 0.57
 * against 0.59 ms. Where between the two the crossover lies is not measured.
 */
const ROWS_FOR_COPY = 1000;

const k = (iteration: number, key: string) => `${iteration}\u0000${key}`;

/** The outcome a trajectory's row stores: the one sent, else what its return implies. */
const storedOutcome = (t: Pick<TrajectoryState, 'outcomeGiven' | 'return'>): Outcome =>
  resolveOutcome(t.outcomeGiven ?? undefined, t.return);

/**
 * The task groups and trajectories an append touches, loaded once and kept in memory for the
 * transaction: new ones get their order of first appearance (the canonical order), existing ones
 * their current length, so continuation steps are numbered after the stored ones. Their rows are
 * written by `takeWrite`: a few by statements sent with the request's others, many by a COPY each for
 * new groups and new trajectories and an upsert for stored ones that changed. What it writes is listed as it happens (not found by a scan of everything held,
 * which grew with the request: a 32 MiB request holds tens of thousands of trajectories).
 */
export class RolloutIndex {
  private readonly groups = new Map<string, GroupState>();
  private readonly trajectories = new Map<string, TrajectoryState>();
  /** The same, by iteration: ingest asks for an iteration's shape with every chunk that moves past it. */
  private readonly trajectoriesOf = new Map<number, TrajectoryState[]>();
  private readonly groupsPerIteration = new Map<number, number>();
  private newGroups: GroupState[] = [];
  private changedTrajectories: TrajectoryState[] = [];
  private readonly runIdBytes: Buffer;

  /**
   * `lastIterationStored`: the run's last iteration when its row was locked. Iterations above it hold
   * nothing yet, so appending a new iteration (the common case) needs no lookups at all.
   */
  constructor(
    private readonly client: pg.PoolClient,
    private readonly runId: string,
    private readonly lastIterationStored: number | null,
  ) {
    this.runIdBytes = uuidBytes(runId);
  }

  find(iteration: number, trajectoryKey: string): TrajectoryState | undefined {
    return this.trajectories.get(k(iteration, trajectoryKey));
  }

  /** Notes that a trajectory's row must be written again (more steps, an outcome). */
  changed(t: TrajectoryState): void {
    if (t.changed) return;
    t.changed = true;
    this.changedTrajectories.push(t);
  }

  /**
   * Loads what is stored for these keys and creates what is missing, in the order given; returns
   * the iteration of each group and trajectory it created (for the iterations' counts).
   */
  async ensure(
    refs: RolloutRef[],
    options = { createMissing: true },
  ): Promise<{ groups: number[]; trajectories: number[] }> {
    const created = { groups: [] as number[], trajectories: [] as number[] };
    const unknown = refs.filter((r) => !this.trajectories.has(k(r.iteration, r.trajectoryKey)));
    if (unknown.length === 0) return created;
    await this.load(unknown);
    if (!options.createMissing) return created;
    for (const r of unknown) {
      let group = this.groups.get(k(r.iteration, r.groupKey));
      if (!group) {
        const ord = this.groupsPerIteration.get(r.iteration) ?? 0;
        this.groupsPerIteration.set(r.iteration, ord + 1);
        group = { iteration: r.iteration, key: r.groupKey, ord, trajectoryCount: 0, stored: false };
        this.groups.set(k(r.iteration, r.groupKey), group);
        this.newGroups.push(group);
        created.groups.push(r.iteration);
      }
      if (this.trajectories.has(k(r.iteration, r.trajectoryKey))) continue;
      const t: TrajectoryState = {
        iteration: r.iteration,
        key: r.trajectoryKey,
        groupKey: r.groupKey,
        groupOrd: group.ord,
        ord: group.trajectoryCount++,
        stepCount: 0,
        return: 0,
        outcomeGiven: null,
        stored: false,
        changed: true,
      };
      this.hold(t);
      this.changedTrajectories.push(t);
      created.trajectories.push(r.iteration);
    }
    return created;
  }

  /**
   * Takes the new groups and every new or changed trajectory (length, return, outcome) as they are
   * now, and what stores them: a few as statements to send with the request's others
   * (`statements`, one-statement.ts), many by a COPY each for the new ones (`copies`, sent before
   * the statements) and an upsert statement for those stored before.
   */
  takeWrite(): { copies: CopyStep[]; statements: pg.QueryConfig[] } {
    const groups = this.newGroups;
    const trajectories = this.changedTrajectories;
    this.newGroups = [];
    this.changedTrajectories = [];
    for (const g of groups) g.stored = true;
    const fresh = trajectories.filter((t) => !t.stored);
    const changed = trajectories.filter((t) => t.stored);
    for (const t of trajectories) {
      t.stored = true;
      t.changed = false;
    }
    const upsert = changed.length > 0 ? [trajectoryUpsert(this.runId, changed)] : [];
    if (groups.length + fresh.length <= ROWS_FOR_COPY)
      return {
        copies: [],
        statements: [
          ...(groups.length > 0 ? [groupInsert(this.runId, groups)] : []),
          ...(fresh.length > 0
            ? [trajectoryRowsStatement(INSERT_TRAJECTORIES_SQL, this.runId, fresh)]
            : []),
          ...upsert,
        ],
      };
    return {
      copies: [
        groups.length > 0
          ? groupRows(this.runIdBytes, groups).copyStep('rollout_groups', GROUP_COLUMNS)
          : undefined,
        fresh.length > 0
          ? trajectoryRows(this.runIdBytes, fresh).copyStep('trajectories', TRAJECTORY_COLUMNS)
          : undefined,
      ].filter((c) => c !== undefined),
      statements: upsert,
    };
  }

  /**
   * The trajectories held of these iterations, each iteration's in canonical order, as a reader's
   * shape would give them once saved: complete only for an iteration whose every trajectory this
   * index created or loaded (InHandPacking's iterations: none was stored before).
   */
  shapes(iterations: readonly number[]): Map<number, TrajectoryShape[]> {
    const out = new Map<number, TrajectoryShape[]>();
    for (const iteration of iterations) {
      const list = this.trajectoriesOf.get(iteration);
      if (!list) continue;
      const shape = list.map((t) => ({
        groupId: t.groupKey,
        trajectoryId: t.key,
        groupOrd: t.groupOrd,
        trajOrd: t.ord,
        outcome: storedOutcome(t),
        length: t.stepCount,
      }));
      out.set(iteration, canonicalShape(shape));
    }
    return out;
  }

  private hold(t: TrajectoryState): void {
    this.trajectories.set(k(t.iteration, t.key), t);
    const list = this.trajectoriesOf.get(t.iteration);
    if (list) list.push(t);
    else this.trajectoriesOf.set(t.iteration, [t]);
  }

  private async load(refs: RolloutRef[]): Promise<void> {
    const last = this.lastIterationStored;
    const stored = refs.filter((r) => last !== null && r.iteration <= last);
    const iterations = [...new Set(refs.map((r) => r.iteration))].filter(
      (i) => !this.groupsPerIteration.has(i),
    );
    if (stored.length > 0) await this.loadStored(stored);
    const countable = iterations.filter((i) => last !== null && i <= last);
    if (countable.length > 0) {
      const counts = await this.client.query<{ iteration: number; n: number }>(
        `SELECT iteration, group_count AS n FROM iterations WHERE run_id = $1 AND iteration = ANY($2::int[])`,
        [this.runId, countable],
      );
      for (const c of counts.rows) this.groupsPerIteration.set(c.iteration, c.n);
    }
    for (const i of iterations)
      if (!this.groupsPerIteration.has(i)) this.groupsPerIteration.set(i, 0);
  }

  private async loadStored(refs: RolloutRef[]): Promise<void> {
    const groupRows = await this.client.query<{
      iteration: number;
      key: string;
      ord: number;
      n: number;
    }>(
      `SELECT g.iteration, g.key, g.ord,
              (SELECT count(*)::int FROM trajectories t
               WHERE t.run_id = g.run_id AND t.iteration = g.iteration AND t.group_ord = g.ord) AS n
       FROM rollout_groups g JOIN unnest($2::int[], $3::text[]) AS r(iteration, key) USING (iteration, key)
       WHERE g.run_id = $1`,
      [this.runId, refs.map((r) => r.iteration), refs.map((r) => r.groupKey)],
    );
    for (const g of groupRows.rows) {
      // A group held already is as this transaction left it, which may be ahead of what the query
      // saw: a chunk's rows are sent while the next is projected (append-session.ts).
      if (this.groups.has(k(g.iteration, g.key))) continue;
      this.groups.set(k(g.iteration, g.key), {
        iteration: g.iteration,
        key: g.key,
        ord: g.ord,
        trajectoryCount: g.n,
        stored: true,
      });
    }
    const trajRows = await this.client.query<{
      iteration: number;
      key: string;
      group_key: string;
      group_ord: number;
      ord: number;
      step_count: number;
      return: number;
      outcome: Outcome;
      outcome_given: boolean;
    }>(
      `SELECT t.iteration, t.key, g.key AS group_key, t.group_ord, t.ord, t.step_count, t.return,
              t.outcome, t.outcome_given
       FROM trajectories t
       JOIN rollout_groups g ON g.run_id = t.run_id AND g.iteration = t.iteration AND g.ord = t.group_ord
       JOIN unnest($2::int[], $3::text[]) AS r(iteration, key) ON r.iteration = t.iteration AND r.key = t.key
       WHERE t.run_id = $1`,
      [this.runId, refs.map((r) => r.iteration), refs.map((r) => r.trajectoryKey)],
    );
    for (const t of trajRows.rows) {
      this.hold({
        iteration: t.iteration,
        key: t.key,
        groupKey: t.group_key,
        groupOrd: t.group_ord,
        ord: t.ord,
        stepCount: t.step_count,
        return: t.return,
        outcomeGiven: t.outcome_given ? t.outcome : null,
        stored: true,
        changed: false,
      });
    }
  }
}

/** A chunk's groups and trajectories take tens of kB (steps take MBs): buffers of this size. */
const ROLLOUT_ROWS_CHUNK_BYTES = 32 * 1024;

/** New groups as binary COPY rows of `rollout_groups` (GROUP_COLUMNS). */
export function groupRows(runIdBytes: Buffer, groups: readonly GroupRow[]): BinaryCopyRows {
  const rows = new BinaryCopyRows(ROLLOUT_ROWS_CHUNK_BYTES);
  for (const g of groups)
    rows
      .row(GROUP_COLUMNS.length, 16 + 8 + 8 + 3 * g.key.length)
      .bytes(runIdBytes)
      .int4(g.iteration)
      .int4(g.ord)
      .text(g.key);
  return rows;
}

/** New trajectories as binary COPY rows of `trajectories` (TRAJECTORY_COLUMNS). */
export function trajectoryRows(
  runIdBytes: Buffer,
  trajectories: readonly TrajectoryRow[],
): BinaryCopyRows {
  const rows = new BinaryCopyRows(ROLLOUT_ROWS_CHUNK_BYTES);
  for (const t of trajectories) {
    const outcome = storedOutcome(t);
    rows
      .row(TRAJECTORY_COLUMNS.length, 16 + 3 * 8 + 3 * t.key.length + outcome.length + 1 + 8 + 12)
      .bytes(runIdBytes)
      .int4(t.iteration)
      .int4(t.groupOrd)
      .int4(t.ord)
      .text(t.key)
      .text(outcome)
      .bool(t.outcomeGiven !== null)
      .int4(t.stepCount)
      .float8(t.return);
  }
  return rows;
}

/** New groups as one INSERT (INSERT_GROUPS_SQL). */
function groupInsert(runId: string, groups: readonly GroupRow[]): pg.QueryConfig {
  return {
    text: INSERT_GROUPS_SQL,
    values: [
      runId,
      groups.map((g) => g.iteration),
      groups.map((g) => g.ord),
      groups.map((g) => g.key),
    ],
  };
}

/** The upsert of trajectories stored before that changed (UPSERT_TRAJECTORIES_SQL). */
function trajectoryUpsert(runId: string, changed: readonly TrajectoryState[]): pg.QueryConfig {
  return trajectoryRowsStatement(UPSERT_TRAJECTORIES_SQL, runId, changed);
}

/** `sql` (INSERT_TRAJECTORIES_SQL or the upsert) with the trajectories' rows as its arrays. */
function trajectoryRowsStatement(
  sql: string,
  runId: string,
  trajectories: readonly TrajectoryState[],
): pg.QueryConfig {
  return {
    text: sql,
    values: [
      runId,
      trajectories.map((t) => t.iteration),
      trajectories.map((t) => t.groupOrd),
      trajectories.map((t) => t.ord),
      trajectories.map((t) => t.key),
      trajectories.map(storedOutcome),
      trajectories.map((t) => t.outcomeGiven !== null),
      trajectories.map((t) => t.stepCount),
      trajectories.map((t) => t.return),
    ],
  };
}

/** What a group's row holds. */
export type GroupRow = Pick<GroupState, 'iteration' | 'ord' | 'key'>;
/** What a trajectory's row holds. */
export type TrajectoryRow = Pick<
  TrajectoryState,
  'iteration' | 'groupOrd' | 'ord' | 'key' | 'outcomeGiven' | 'stepCount' | 'return'
>;
