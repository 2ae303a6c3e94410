/**
 * A step's text in SQL (`s` is a row of the steps view): one lookup by the texts' whole primary key
 * per step, as a scalar subquery rather than a join. Joined, the planner may scan all of the run's
 * texts for every step, which it does when its statistics still describe a smaller table (a new
 * run, before autovacuum's ANALYZE): one iteration's steps (16 groups, about 1,500 steps) then took
 * PostgreSQL 178 ms against 6 ms by key, and 16 against 6 ms once analysed (docs/benchmarks.md).
 * Every step's texts exist (ingest writes them with the step), so this gives the join's rows.
 */
export function stepText(column: 'state_id' | 'action_id' | 'next_state_id'): string {
  return `(SELECT tx.text FROM texts tx WHERE tx.run_id = s.run_id AND tx.id = s.${column})`;
}
