/**
 * `npm run bench:ingest-database`: where PostgreSQL's time per ingested step goes. A
 * synthetic run is ingested over HTTP (iterations not packed, so nothing runs in the background),
 * then every kind of write ingest makes is replayed alone, with the server's own statement (imported
 * from the rollouts modules, so the two cannot drift apart), on the rows the server stored, into a
 * second run: one transaction per iteration, as a request is one.
 * For each kind: PostgreSQL's CPU per step (all its processes, from /proc) and the WAL per step. The
 * packing of iterations for recompute (CREDITLAB_PACK_ITERATIONS=on-complete) is the server's own
 * code run on the replayed run. Writes its section of docs/benchmarks.md.
 */
import { createReadStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Outcome } from '@creditlab/estimators';
import type pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import { packRun } from '../apps/server/src/advantages/iteration-packing';
import { STORED_EVENT_IDS_SQL } from '../apps/server/src/rollouts/append-session';
import { binaryCopySql, uuidBytes } from '../apps/server/src/rollouts/binary-copy-rows';
import { insertEvents, type EventRow } from '../apps/server/src/rollouts/events-insert';
import { UPSERT_ITERATIONS_SQL } from '../apps/server/src/rollouts/iteration-tally';
import {
  GROUP_COLUMNS,
  groupRows,
  TRAJECTORY_COLUMNS,
  trajectoryRows,
  UPSERT_TRAJECTORIES_SQL,
  type TrajectoryRow,
} from '../apps/server/src/rollouts/rollout-index';
import { lockRun } from '../apps/server/src/rollouts/run-lock';
import { runSummaryUpdate } from '../apps/server/src/rollouts/run-projector';
import { STEP_SLICE_COLUMNS } from '../apps/server/src/rollouts/step-slice-rows';
import { INSERT_TEXTS_SQL } from '../apps/server/src/rollouts/text-dictionary';
import { fmt, machineLine, writeSection } from './support/bench-report';
import { createRun } from './support/bench-run';
import { startBenchServer } from './support/bench-server';
import { databaseCpu, databaseCpuSince, walPosition, walSince } from './support/database-cost';
import { writeRequests } from './support/ingest-requests';
import { postNdjsonStream } from './support/post-ndjson';

const STEPS = Number(process.env.BENCH_INGEST_DB_STEPS ?? 200_000);

interface Cost {
  kind: string;
  cpuSeconds: number;
  walBytes: number;
}

/** One iteration's stored rows, as the server wrote them, ready to write again into another run. */
interface IterationRows {
  iteration: number;
  groups: unknown[][];
  trajectories: unknown[][];
  iterations: unknown[][];
  texts: unknown[][];
  events: EventRow[];
  /** The step slices as one binary COPY stream (the server's columns), the run id replaced. */
  slices: Buffer;
  /** The same steps one row each, as the `steps` view shows them (the table before step slices). */
  steps: Buffer;
}

/** The columns of the steps table before step slices (migrations/20261206000000_step_slices). */
const PER_STEP_COLUMNS = STEP_SLICE_COLUMNS.filter((c) => c !== 'step_count').map((c) =>
  c === 'first_idx' ? 'idx' : c,
);

/** A binary COPY of `select` (which names the run being read), the run's id replaced by `target`'s. */
async function copyOut(db: pg.PoolClient, columns: string[], from: string, target: string) {
  const chunks: Buffer[] = [];
  const replaced = columns.map((c) => (c === 'run_id' ? `'${target}'::uuid` : c));
  await pipeline(
    db.query(copyTo(`COPY (SELECT ${replaced.join(', ')} ${from}) TO STDOUT (FORMAT binary)`)),
    new Writable({
      write: (c: Buffer, _e, done) => {
        chunks.push(c);
        done();
      },
    }),
  );
  return Buffer.concat(chunks);
}

type GroupFields = Parameters<typeof groupRows>[1][number];

/** A stored trajectory row (the columns rowsOf selects) as the server's COPY writes it. */
function trajectoryFields(row: unknown[]): TrajectoryRow {
  const [iteration, groupOrd, ord, key, outcome, outcomeGiven, stepCount, ret] = row as [
    number,
    number,
    number,
    string,
    Outcome,
    boolean,
    number,
    number,
  ];
  return {
    iteration,
    groupOrd,
    ord,
    key,
    outcomeGiven: outcomeGiven ? outcome : null,
    stepCount,
    return: ret,
  };
}

/** The column arrays of `rows` (each row a list of fields), for unnest parameters. */
const columnsOf = (rows: unknown[][], n: number) =>
  Array.from({ length: n }, (_, k) => rows.map((r) => r[k]));

async function rowsOf(db: pg.PoolClient, runId: string, target: string, iteration: number) {
  const q = async (sql: string) =>
    (await db.query({ text: sql, values: [runId, iteration], rowMode: 'array' })).rows;
  const where = `WHERE run_id = '${runId}' AND iteration = ${iteration}`;
  return {
    iteration,
    groups: await q(
      'SELECT iteration, ord, key FROM rollout_groups WHERE run_id = $1 AND iteration = $2',
    ),
    trajectories: await q(`SELECT iteration, group_ord, ord, key, outcome, outcome_given,
      step_count, return FROM trajectories WHERE run_id = $1 AND iteration = $2`),
    iterations: await q(`SELECT iteration, group_count, trajectory_count, step_count, inputs_seq,
      metrics::text, evaluation_success_rate, last_seq FROM iterations WHERE run_id = $1 AND iteration = $2`),
    texts: [],
    events: (
      await q(`SELECT seq, gen_random_uuid(), type, iteration, data::text, step_count,
      body_hash, body FROM events WHERE run_id = $1 AND iteration = $2 ORDER BY seq`)
    ).map(
      ([seq, id, type, it, data, stepCount, hash, body]) =>
        ({ seq: Number(seq), id, type, iteration: it, data, stepCount, hash, body }) as EventRow,
    ),
    slices: await copyOut(
      db,
      STEP_SLICE_COLUMNS,
      `FROM step_slices ${where} ORDER BY group_ord, traj_ord, first_idx`,
      target,
    ),
    steps: await copyOut(
      db,
      PER_STEP_COLUMNS,
      `FROM steps ${where} ORDER BY group_ord, traj_ord, idx`,
      target,
    ),
  } satisfies IterationRows;
}

/** Each kind of write, with the statement the server uses for it (imported from its modules). */
const WRITES: {
  kind: string;
  write: (db: pg.PoolClient, run: string, it: IterationRows) => Promise<unknown>;
}[] = [
  {
    kind: 'request: BEGIN, lock the run row, duplicate-id check, run summary, COMMIT',
    write: async (db, run, it) => {
      const locked = await lockRun(db, run);
      if (!locked) throw new Error(`run ${run} is gone`);
      await db.query(STORED_EVENT_IDS_SQL, [run, it.events.map((e) => e.id)]);
      const lastSeq = it.events.at(-1)?.seq ?? locked.run.lastSeq;
      await db.query(
        runSummaryUpdate(run, { ...locked.run, lastSeq, lastIteration: it.iteration }),
      );
    },
  },
  {
    kind: 'rollout_groups binary COPY',
    write: (db, run, it) =>
      groupRows(
        uuidBytes(run),
        it.groups.map(([iteration, ord, key]) => ({ iteration, ord, key }) as GroupFields),
      ).copyInto(db, 'rollout_groups', GROUP_COLUMNS),
  },
  {
    kind: 'trajectories binary COPY (new ones)',
    write: (db, run, it) =>
      trajectoryRows(uuidBytes(run), it.trajectories.map(trajectoryFields)).copyInto(
        db,
        'trajectories',
        TRAJECTORY_COLUMNS,
      ),
  },
  {
    kind: 'the same new trajectories by the upsert (arrays through unnest, ON CONFLICT), into a copy of trajectories with its keys: how they were written before 2026-12-03, and how stored ones that changed still are',
    write: (db, run, it) =>
      db.query(
        UPSERT_TRAJECTORIES_SQL.replace(
          'INSERT INTO trajectories (',
          'INSERT INTO trajectories_upsert (',
        ),
        [run, ...columnsOf(it.trajectories, 8)],
      ),
  },
  {
    kind: 'iterations insert (ON CONFLICT update)',
    write: (db, run, it) => db.query(UPSERT_ITERATIONS_SQL, [run, ...columnsOf(it.iterations, 8)]),
  },
  {
    kind: 'texts insert (ON CONFLICT DO NOTHING)',
    write: (db, run, it) =>
      it.texts.length === 0
        ? Promise.resolve()
        : db.query(INSERT_TEXTS_SQL, [run, ...columnsOf(it.texts, 2)]),
  },
  {
    kind: 'step_slices binary COPY (primary key; a row per slice of about 12 steps)',
    write: (db, _run, it) =>
      pipeline(
        Readable.from([it.slices]),
        db.query(copyFrom(binaryCopySql('step_slices', STEP_SLICE_COLUMNS))),
      ),
  },
  {
    kind: 'the same steps one row each, into the steps table before step slices (with its primary key)',
    write: (db, _run, it) =>
      pipeline(
        Readable.from([it.steps]),
        db.query(copyFrom(binaryCopySql('steps_per_row', PER_STEP_COLUMNS))),
      ),
  },
  {
    kind: 'events insert (data, digest, body)',
    write: (db, run, it) => insertEvents(db, run, it.events, new Date()),
  },
];

/** The steps table before step slices, as migrations/20261202000000_projections made it. */
const STEPS_PER_ROW_TABLE = `CREATE TABLE steps_per_row (
  run_id uuid NOT NULL, iteration integer NOT NULL, group_ord integer NOT NULL, traj_ord integer NOT NULL,
  idx integer NOT NULL, seq bigint NOT NULL, state_id bigint NOT NULL, action_id bigint NOT NULL,
  reward double precision NOT NULL, nll double precision, token_logprobs bytea, embedding bytea,
  value double precision, next_state_id bigint, next_value double precision, extra jsonb,
  PRIMARY KEY (run_id, iteration, group_ord, traj_ord, idx))`;

/** Runs `work` and returns PostgreSQL's CPU and WAL it cost. */
async function measure(
  db: pg.PoolClient,
  pgDir: string | undefined,
  kind: string,
  work: () => Promise<unknown>,
): Promise<Cost> {
  await db.query('CHECKPOINT'); // every kind starts with clean pages, so none pays another's full-page writes
  const wal = await walPosition(db);
  const cpu = await databaseCpu(pgDir);
  await work();
  return {
    kind,
    cpuSeconds: await databaseCpuSince(pgDir, cpu),
    walBytes: await walSince(db, wal),
  };
}

async function main(): Promise<void> {
  const bench = await startBenchServer({ CREDITLAB_PACK_ITERATIONS: 'on-read' });
  const { server, dir, pgDataDir } = bench;
  const db = await bench.pool.connect();
  const costs: Cost[] = [];
  let steps = 0;
  try {
    const { files } = await writeRequests(dir, {
      label: 'db-breakdown',
      steps: STEPS,
      embeddingDim: 0,
    });
    const source = await createRun(server.url, 'bench source');
    costs.push(
      await measure(db, pgDataDir, 'whole HTTP ingest (reference)', async () => {
        for (const f of files)
          await postNdjsonStream(
            `${server.url}/v1/runs/${source}/events`,
            createReadStream(f),
            (await stat(f)).size,
          );
      }),
    );
    for (const f of files) await rm(f);
    steps = Number(
      (await db.query('SELECT count(*) FROM steps WHERE run_id = $1', [source])).rows[0].count,
    );
    const target = await createRun(server.url, 'bench replay');
    await db.query(STEPS_PER_ROW_TABLE);
    await db.query('CREATE TABLE trajectories_upsert (LIKE trajectories INCLUDING INDEXES)');
    const iterations: IterationRows[] = [];
    for (let i = 0; i < files.length; i++) iterations.push(await rowsOf(db, source, target, i));
    // Each text goes with the first iteration that uses it: the request that stored it.
    const texts = await db.query<{ id: string; text: string; first: number }>(
      `SELECT t.id::text AS id, t.text, f.first FROM texts t JOIN (
         SELECT id, min(iteration) AS first FROM (
           SELECT state_id AS id, iteration FROM steps WHERE run_id = $1
           UNION ALL SELECT action_id, iteration FROM steps WHERE run_id = $1
           UNION ALL SELECT next_state_id, iteration FROM steps WHERE run_id = $1) s
         GROUP BY id) f ON f.id = t.id
       WHERE t.run_id = $1`,
      [source],
    );
    for (const t of texts.rows) iterations[t.first]?.texts.push([t.id, t.text]);
    for (const { kind, write } of WRITES) {
      costs.push(
        await measure(db, pgDataDir, kind, async () => {
          for (const it of iterations) {
            await db.query('BEGIN');
            await write(db, target, it);
            await db.query('COMMIT');
          }
        }),
      );
    }
    await db.query(`UPDATE runs SET status = 'completed', last_iteration = $2 WHERE id = $1`, [
      target,
      iterations.length - 1,
    ]);
    costs.push(
      await measure(db, pgDataDir, 'packing every iteration for recompute (on-complete)', () =>
        packRun(bench.pool, target),
      ),
    );
  } finally {
    db.release();
    await bench.close();
  }
  report(costs, steps);
}

function report(costs: Cost[], steps: number): void {
  const perStep = (c: Cost) => `${fmt((c.cpuSeconds / steps) * 1e6, 2)} µs`;
  for (const c of costs)
    console.log(`${c.kind}: ${perStep(c)}, WAL ${fmt(c.walBytes / steps, 0)} B/step`);
  const [whole, ...kinds] = costs as [Cost, ...Cost[]];
  const ingestKinds = kinds.filter(
    (c) => !c.kind.startsWith('the same') && !c.kind.startsWith('packing'),
  );
  const sum = ingestKinds.reduce(
    (a, c) => ({
      ...a,
      cpuSeconds: a.cpuSeconds + c.cpuSeconds,
      walBytes: a.walBytes + c.walBytes,
    }),
    {
      kind: 'sum of the kinds above',
      cpuSeconds: 0,
      walBytes: 0,
    },
  );
  const row = (c: Cost) => `| ${c.kind} | ${perStep(c)} | ${fmt(c.walBytes / steps, 0)} B |`;
  writeSection(
    'ingest-database',
    `
## Where the database's time per ingested step goes (\`npm run bench:ingest-database\`)

Machine: ${machineLine()}. Run on ${new Date().toISOString().slice(0, 10)}.
Command: \`npm run bench:ingest-database\` (\`BENCH_INGEST_DB_STEPS\`, default 200,000); ${steps.toLocaleString('en')} steps without embeddings.

The ingest benchmark's workload is sent over HTTP (iterations not packed), then each kind of write is
replayed alone with the server's own statement on the rows the server stored, into a second run, one
transaction per iteration (a request is one), after a CHECKPOINT. PostgreSQL's CPU (all its processes,
from /proc) and WAL per step, whatever else the machine does:

| write | database CPU per step | WAL per step |
|---|---:|---:|
${row(whole)}
${ingestKinds.map(row).join('\n')}
${row(sum)}
${kinds
  .filter((c) => !ingestKinds.includes(c))
  .map(row)
  .join('\n')}
`,
  );
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
