import type pg from 'pg';
import { sendPipelined, type CopyStep, type PipelineStep } from './pipeline';
import { notePipelineFailure, preparedName } from './repeated-statements';

/**
 * Sends `copies`, then `statements`, then COMMIT if `commit`, in order on the client's connection
 * (behind whatever it was handed before); resolves once all are done, rejects with the first error.
 * When every statement is prepared on the connection already, all go as one pipeline: one write and
 * one round trip, where each was one (pipeline.ts). Otherwise the copies as one and the statements
 * one query each, as before, which prepares them (repeated-statements.ts), so that a connection's
 * first requests make the next ones' single round trip possible.
 */
export async function sendWrites(
  client: pg.ClientBase,
  copies: readonly CopyStep[],
  statements: readonly pg.QueryConfig[],
  commit: boolean,
): Promise<void> {
  const steps: PipelineStep[] = [...copies];
  const names: string[] = [];
  for (const statement of statements) {
    const name = preparedName(client, statement.text);
    if (name === undefined) return oneByOne(client, copies, statements, commit);
    steps.push({ statement, name });
    names.push(name);
  }
  if (commit) steps.push({ statement: { text: 'COMMIT' } });
  let tags: string[];
  try {
    tags = await sendPipelined(client, steps);
  } catch (e) {
    notePipelineFailure(client, names, e);
    throw e;
  }
  // A COMMIT of a transaction that failed before the pipeline rolls it back without an error.
  if (commit && tags.at(-1) !== 'COMMIT')
    throw new Error(`the transaction was not committed: PostgreSQL answered ${tags.at(-1)}`);
}

async function oneByOne(
  client: pg.ClientBase,
  copies: readonly CopyStep[],
  statements: readonly pg.QueryConfig[],
  commit: boolean,
): Promise<void> {
  await sendPipelined(client, copies);
  for (const statement of statements) await client.query(statement);
  if (commit) await client.query('COMMIT');
}
