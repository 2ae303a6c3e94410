import type pg from 'pg';

export interface TrajectoryState {
  id: string;
  iteration: number;
  groupKey: string;
  key: string;
  stepCount: number;
  return: number;
  outcome: string | null;
  changed: boolean;
}

interface GroupState {
  id: string;
  iteration: number;
  key: string;
  trajectoryCount: number;
}

const k = (iteration: number, key: string) => `${iteration}\u0000${key}`;

/**
 * The task groups and trajectories an append touches, loaded once and kept in
 * memory for the transaction: new ones get their order of first appearance
 * (the canonical order), existing ones their current length, so continuation
 * steps are numbered after the stored ones.
 */
export class RolloutIndex {
  private readonly groups = new Map<string, GroupState>();
  private readonly trajectories = new Map<string, TrajectoryState>();
  private readonly groupsPerIteration = new Map<number, number>();

  /**
   * `lastIterationStored`: the run's last iteration when its row was locked. Iterations above it hold
   * nothing yet, so appending a new iteration (the common case) needs no lookups at all.
   */
  constructor(
    private readonly client: pg.PoolClient,
    private readonly runId: string,
    private readonly lastIterationStored: number | null,
  ) {}

  find(iteration: number, trajectoryKey: string): TrajectoryState | undefined {
    return this.trajectories.get(k(iteration, trajectoryKey));
  }

  /** Loads what is stored for these keys and creates (and inserts) what is missing, in the order given. */
  async ensure(
    refs: { iteration: number; groupKey: string; trajectoryKey: string }[],
    options = { createMissing: true },
  ): Promise<void> {
    const unknown = refs.filter((r) => !this.trajectories.has(k(r.iteration, r.trajectoryKey)));
    if (unknown.length === 0) return;
    await this.load(unknown);
    if (!options.createMissing) return;
    const newGroups: GroupState[] = [];
    const newTrajectories: { state: TrajectoryState; group: GroupState; ord: number }[] = [];
    for (const r of unknown) {
      let group = this.groups.get(k(r.iteration, r.groupKey));
      if (!group) {
        group = { id: '', iteration: r.iteration, key: r.groupKey, trajectoryCount: 0 };
        this.groups.set(k(r.iteration, r.groupKey), group);
        newGroups.push(group);
      }
      if (this.trajectories.has(k(r.iteration, r.trajectoryKey))) continue;
      const state: TrajectoryState = {
        id: '',
        iteration: r.iteration,
        groupKey: r.groupKey,
        key: r.trajectoryKey,
        stepCount: 0,
        return: 0,
        outcome: null,
        changed: false,
      };
      this.trajectories.set(k(r.iteration, r.trajectoryKey), state);
      newTrajectories.push({ state, group, ord: group.trajectoryCount++ });
    }
    await this.insertGroups(newGroups);
    await this.insertTrajectories(newTrajectories);
  }

  /** Writes the length, return and outcome of every trajectory this append changed. */
  async saveChanges(): Promise<void> {
    const changed = [...this.trajectories.values()].filter((t) => t.changed);
    if (changed.length === 0) return;
    await this.client.query(
      `UPDATE trajectories t SET step_count = u.step_count, return = u.return, outcome = u.outcome
       FROM unnest($1::bigint[], $2::int[], $3::float8[], $4::text[]) AS u(id, step_count, return, outcome)
       WHERE t.id = u.id`,
      [
        changed.map((t) => t.id),
        changed.map((t) => t.stepCount),
        changed.map((t) => t.return),
        changed.map((t) => t.outcome),
      ],
    );
    for (const t of changed) t.changed = false;
  }

  private async load(
    refs: { iteration: number; groupKey: string; trajectoryKey: string }[],
  ): Promise<void> {
    const iterations = [...new Set(refs.map((r) => r.iteration))];
    const groupRows = await this.client.query<{
      id: string;
      iteration: number;
      key: string;
      trajectories: number;
    }>(
      `SELECT g.id, g.iteration, g.key, (SELECT count(*)::int FROM trajectories t WHERE t.group_id = g.id) AS trajectories
       FROM rollout_groups g JOIN unnest($2::int[], $3::text[]) AS r(iteration, key) USING (iteration, key)
       WHERE g.run_id = $1`,
      [this.runId, refs.map((r) => r.iteration), refs.map((r) => r.groupKey)],
    );
    for (const g of groupRows.rows) {
      this.groups.set(k(g.iteration, g.key), {
        id: g.id,
        iteration: g.iteration,
        key: g.key,
        trajectoryCount: g.trajectories,
      });
    }
    const trajRows = await this.client.query<{
      id: string;
      iteration: number;
      key: string;
      group_key: string;
      step_count: number;
      return: number;
      outcome: string | null;
    }>(
      `SELECT t.id, t.iteration, t.key, g.key AS group_key, t.step_count, t.return, t.outcome
       FROM trajectories t JOIN rollout_groups g ON g.id = t.group_id
       JOIN unnest($2::int[], $3::text[]) AS r(iteration, key) ON r.iteration = t.iteration AND r.key = t.key
       WHERE t.run_id = $1`,
      [this.runId, refs.map((r) => r.iteration), refs.map((r) => r.trajectoryKey)],
    );
    for (const t of trajRows.rows) {
      this.trajectories.set(k(t.iteration, t.key), {
        id: t.id,
        iteration: t.iteration,
        groupKey: t.group_key,
        key: t.key,
        stepCount: t.step_count,
        return: t.return,
        outcome: t.outcome,
        changed: false,
      });
    }
    const missingCounts = iterations.filter((i) => !this.groupsPerIteration.has(i));
    if (missingCounts.length > 0) {
      const counts = await this.client.query<{ iteration: number; n: number }>(
        `SELECT r.iteration, (SELECT count(*)::int FROM rollout_groups g WHERE g.run_id = $1 AND g.iteration = r.iteration) AS n
         FROM unnest($2::int[]) AS r(iteration)`,
        [this.runId, missingCounts],
      );
      for (const c of counts.rows) this.groupsPerIteration.set(c.iteration, c.n);
    }
  }

  private async insertGroups(groups: GroupState[]): Promise<void> {
    if (groups.length === 0) return;
    const ords = groups.map((g) => {
      const n = this.groupsPerIteration.get(g.iteration) ?? 0;
      this.groupsPerIteration.set(g.iteration, n + 1);
      return n;
    });
    const res = await this.client.query<{ id: string; iteration: number; key: string }>(
      `INSERT INTO rollout_groups (run_id, iteration, ord, key)
       SELECT $1, iteration, ord, key FROM unnest($2::int[], $3::int[], $4::text[]) AS u(iteration, ord, key)
       RETURNING id, iteration, key`,
      [this.runId, groups.map((g) => g.iteration), ords, groups.map((g) => g.key)],
    );
    for (const row of res.rows)
      (this.groups.get(k(row.iteration, row.key)) as GroupState).id = row.id;
  }

  private async insertTrajectories(
    items: { state: TrajectoryState; group: GroupState; ord: number }[],
  ): Promise<void> {
    if (items.length === 0) return;
    const res = await this.client.query<{ id: string; iteration: number; key: string }>(
      `INSERT INTO trajectories (run_id, group_id, iteration, ord, key)
       SELECT $1, group_id, iteration, ord, key FROM unnest($2::bigint[], $3::int[], $4::int[], $5::text[])
         AS u(group_id, iteration, ord, key)
       RETURNING id, iteration, key`,
      [
        this.runId,
        items.map((i) => i.group.id),
        items.map((i) => i.state.iteration),
        items.map((i) => i.ord),
        items.map((i) => i.state.key),
      ],
    );
    for (const row of res.rows)
      (this.trajectories.get(k(row.iteration, row.key)) as TrajectoryState).id = row.id;
  }
}
