/**
 * `npm run bench:ingest`: streams a synthetic run through POST /v1/runs/{id}/events
 * of a real server process, and in the same run, on the same database, loads
 * the very rows the server wrote with a plain COPY from a file (into a copy of
 * the steps table without foreign keys or triggers): the ceiling. Writes steps/s
 * for both and their ratio to docs/benchmarks.md, without and with
 * 256-dimensional embeddings.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { open, readFile, rm, stat } from 'node:fs/promises';
import { once } from 'node:events';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CreditlabClient } from '@creditlab/client';
import pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import { benchCommand, fmt, machineLine, writeSection } from './support/bench-report';
import { createRun } from './support/bench-run';
import { startBenchServer } from './support/bench-server';
import { writeRequests, type IngestScenario } from './support/ingest-requests';
import {
  cpuSeconds,
  databaseCpu,
  databaseCpuSince,
  walPosition,
  walSince,
} from './support/database-cost';
import { postNdjsonStream } from './support/post-ndjson';
import { appendBreakdown, scrapeMetrics, type AppendBreakdown } from './support/server-metrics';
import { STATEMENT_CHARS, StatementStats, type StatementCost } from './support/statement-stats';
import { APPEND_PHASES } from '../apps/server/src/rollouts/append-clock';
import { ADMIN_KEY } from '../test/support/test-server';

const SIZES = (process.env.BENCH_INGEST_SIZES ?? '100000,1000000').split(',').map(Number);
const EMBEDDED_STEPS = Number(process.env.BENCH_INGEST_EMBEDDING_STEPS ?? 200_000);

type Scenario = IngestScenario;

interface Result extends Scenario {
  requests: number;
  bytes: number;
  httpSeconds: number;
  /** CPU the server process used during the HTTP ingest. */
  serverCpuSeconds: number;
  /**
   * From the last answer until every complete iteration was packed for recompute (the background
   * packer may lag behind ingest), and the server's and PostgreSQL's CPU from the first request
   * until then; undefined with CREDITLAB_PACK_ITERATIONS=on-read, which packs nothing at ingest.
   */
  packing?: { lagSeconds: number; serverCpuSeconds: number; databaseCpuSeconds: number };
  /** WAL written during the HTTP ingest: every byte the database wrote for it. */
  httpWalBytes: number;
  /** COPY of the logical step rows (texts inline): the ceiling the goal is stated against. */
  logicalCopySeconds: number;
  logicalWalBytes: number;
  /** CPU of PostgreSQL (all its processes) during the HTTP ingest, and during the logical COPY. */
  httpDatabaseCpuSeconds: number;
  logicalDatabaseCpuSeconds: number;
  /** COPY of the step slices the server stored (text ids) into a copy of its step_slices table. */
  storedCopySeconds: number;
  /**
   * The logical rows again, one COPY per request, each committed before the next is sent: what
   * PostgreSQL allows at the scenario's cadence. Undefined for the sender, whose requests are made
   * as it goes.
   */
  requestCopySeconds?: number;
  distinctTexts: number;
  /** The database's costliest statements during the HTTP ingest (empty without pg_stat_statements). */
  statements: StatementCost[];
  /** Where the requests' time went, from the server's /metrics before and after the HTTP ingest. */
  breakdown: AppendBreakdown;
  /** The run the pass shown wrote. */
  runId: string;
  /** HTTP ÷ logical COPY of every pass, in the order run (the figures shown are the median pass's). */
  ratios: number[];
}

/** Text-format COPY escaping (backslash, tab, newline, carriage return). */
const copyField = (x: string) =>
  x.replace(
    /[\\\t\n\r]/g,
    (c) => `\\${c === '\t' ? 't' : c === '\n' ? 'n' : c === '\r' ? 'r' : '\\'}`,
  );
const copyNum = (x: unknown) => (typeof x === 'number' ? String(x) : '\\N');
const copyVector = (x: unknown) =>
  typeof x === 'string' ? `\\\\x${Buffer.from(x, 'base64').toString('hex')}` : '\\N';

interface WireStep {
  state: string;
  action: string;
  reward: number;
  nll?: number;
  value?: number;
  embedding?: string;
  tokenLogprobs?: string;
}

/**
 * The logical rows of the requests' steps, as a lab would load them with no server at all: run,
 * iteration, group id, trajectory id, index, state and action text inline, reward, NLL, value
 * (and the vectors, when the scenario has them), for one plain COPY. Returns the bytes of each
 * file's rows, in order, for the COPY a request at a time.
 */
async function writeLogicalRows(files: string[], runId: string, out: string): Promise<number[]> {
  const sink = createWriteStream(out);
  const lengths: number[] = [];
  for (const file of files) {
    const lines = (await readFile(file, 'utf8')).split('\n');
    let chunk = '';
    for (const line of lines) {
      if (line === '') continue;
      const e = JSON.parse(line) as {
        type: string;
        data: {
          iteration: number;
          groups: { id: string; trajectories: { id: string; steps: WireStep[] }[] }[];
        };
      };
      if (e.type !== 'rollouts.appended') continue;
      for (const g of e.data.groups)
        for (const t of g.trajectories)
          t.steps.forEach((st, i) => {
            chunk += `${runId}\t${e.data.iteration}\t${copyField(g.id)}\t${copyField(t.id)}\t${i}\t${copyField(st.state)}\t${copyField(st.action)}\t${copyNum(st.reward)}\t${copyNum(st.nll)}\t${copyNum(st.value)}\t${copyVector(st.embedding)}\t${copyVector(st.tokenLogprobs)}\n`;
          });
    }
    lengths.push(Buffer.byteLength(chunk));
    if (!sink.write(chunk)) await once(sink, 'drain');
  }
  await new Promise((r) => sink.end(r));
  return lengths;
}

interface Measured {
  seconds: number;
  walBytes: number;
  databaseCpuSeconds: number;
}

/**
 * Starts a timed phase from a checkpoint: otherwise a phase pays for writing out the pages the phase
 * before dirtied, and for full-page images if a checkpoint falls inside it (a logical COPY of 1M steps
 * ran at half speed in some passes so). Needs the right to CHECKPOINT (superuser, or pg_checkpoint);
 * without it the phases are timed as they come.
 */
async function checkpoint(db: Pick<pg.ClientBase, 'query'>): Promise<void> {
  await db.query('CHECKPOINT').catch(() => undefined);
}

/**
 * Sends each form of the scenarios once, untimed, into a run of its own: a lab's server is long
 * running, and the first requests of a fresh process pay for compiling the ingest path (a 100k-step
 * request as columns ran at about a third of the COPY as the first scenario of a run, about half after
 * others). WARM_UP_STEPS each.
 */
async function warmUp(scenarios: Scenario[], serverUrl: string, dir: string): Promise<void> {
  const forms = new Map(
    scenarios.map((s) => [`${s.columnar}/${s.requestBytes}/${s.embeddingDim}`, s]),
  );
  for (const s of forms.values()) {
    const { files } = await writeRequests(dir, { ...s, label: 'warm-up', steps: WARM_UP_STEPS });
    const id = await createRun(serverUrl, 'bench warm-up');
    for (const f of files) {
      await postFile(`${serverUrl}/v1/runs/${id}/events`, f, (await stat(f)).size);
      await rm(f);
    }
  }
}

const WARM_UP_STEPS = 50_000;

const COPY_CEILING = 'COPY ingest_ceiling FROM STDIN';

/** `load` (its COPYs) into a fresh table made by `create`, then dropped: time, WAL written, database CPU. */
async function timeCopy(
  client: pg.PoolClient,
  pgDir: string | undefined,
  create: string,
  load: () => Promise<void>,
): Promise<Measured> {
  await client.query('DROP TABLE IF EXISTS ingest_ceiling');
  await client.query(create);
  await checkpoint(client);
  const wal = await walPosition(client);
  const dbCpu = await databaseCpu(pgDir);
  const t0 = performance.now();
  await load();
  const seconds = (performance.now() - t0) / 1000;
  const databaseCpuSeconds = await databaseCpuSince(pgDir, dbCpu);
  const walBytes = await walSince(client, wal);
  await client.query('DROP TABLE ingest_ceiling');
  return { seconds, walBytes, databaseCpuSeconds };
}

/** `file` in one plain COPY. */
const copyWhole = (client: pg.PoolClient, file: string) => () =>
  pipeline(createReadStream(file), client.query(copyFrom(COPY_CEILING)));

const CREATE_LOGICAL = `CREATE TABLE ingest_ceiling (run_id uuid, iteration int, group_id text,
  trajectory_id text, idx int, state text, action text, reward float8, nll float8, value float8,
  embedding bytea, token_logprobs bytea)`;

/**
 * `file` cut where the scenario's requests are cut (`lengths`, bytes each): each request's rows in a
 * transaction of their own (BEGIN, COPY, COMMIT), the next sent once that one has committed, as the
 * server answers each request once it has. What the cadence costs PostgreSQL itself (a commit's
 * flush of the WAL, a COPY's start), beside the server's work.
 */
const copyPerRequest = (client: pg.PoolClient, file: string, lengths: number[]) => async () => {
  const handle = await open(file);
  try {
    let at = 0;
    for (const length of lengths) {
      const rows = Buffer.allocUnsafe(length);
      const { bytesRead } = await handle.read(rows, 0, length, at);
      if (bytesRead !== length)
        throw new Error(`${file}: ${bytesRead} of ${length} bytes at ${at}`);
      at += length;
      await client.query('BEGIN');
      try {
        await pipeline(Readable.from([rows]), client.query(copyFrom(COPY_CEILING)));
        await client.query('COMMIT');
      } catch (e) {
        await client.query('ROLLBACK');
        throw e;
      }
    }
  } finally {
    await handle.close();
  }
};

/** Waits until every complete iteration of the run (all but its last) is packed at its current position. */
async function packingDone(db: pg.Pool, runId: string): Promise<void> {
  for (;;) {
    const { rows } = await db.query<{ left: number }>(
      `SELECT count(*)::int AS left FROM iterations it JOIN runs r ON r.id = it.run_id
       LEFT JOIN iteration_columns c ON c.run_id = it.run_id AND c.iteration = it.iteration
         AND c.inputs_seq = it.inputs_seq
       WHERE it.run_id = $1 AND it.step_count > 0 AND it.iteration < r.last_iteration
         AND c.run_id IS NULL`,
      [runId],
    );
    if (rows[0]?.left === 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

const postFile = (url: string, file: string, size: number) =>
  postNdjsonStream(url, createReadStream(file), size);

/** Each file as one request, one after the other; returns how many requests that was. */
async function postFiles(url: string, files: string[]): Promise<number> {
  for (const f of files) await postFile(url, f, (await stat(f)).size);
  return files.length;
}

/**
 * Each iteration's file handed to the TypeScript client's background sender as soon as it is read,
 * as a trainer faster than the server would log them; returns the requests the sender made.
 */
async function throughSender(serverUrl: string, runId: string, files: string[]): Promise<number> {
  const sender = new CreditlabClient({ url: serverUrl, apiKey: ADMIN_KEY }).sender(runId);
  for (const f of files) await sender.logNdjson(await readFile(f));
  return (await sender.close()).requests;
}

/**
 * Each scenario is sent this many times (BENCH_INGEST_PASSES, default 3), each time into a new run
 * with its ceilings measured right after; the report shows the pass with the median ratio (of an
 * even number, the lower of the middle two), and the range over the passes: one pass's ceiling can
 * swing by half on a shared machine.
 */
const PASSES = Number(process.env.BENCH_INGEST_PASSES ?? 3);
if (!Number.isInteger(PASSES) || PASSES < 1)
  throw new Error(
    `BENCH_INGEST_PASSES: a whole number of at least 1, got "${process.env.BENCH_INGEST_PASSES}"`,
  );

/** What one pass measured: the HTTP ingest of a scenario into a new run, then its ceilings. */
type Pass = Omit<Result, keyof Scenario | 'bytes' | 'ratios'>;

const ratioOf = (p: Pass) => p.logicalCopySeconds / p.httpSeconds;

async function runScenario(
  s: Scenario,
  serverUrl: string,
  serverPid: number,
  pgDir: string | undefined,
  db: pg.Pool,
  dir: string,
  stats: StatementStats,
): Promise<Result> {
  const { files, iterations, bytes } = await writeRequests(dir, s);
  const logicalFile = path.join(dir, `${s.label}-logical.copy`);
  const passes: Pass[] = [];
  let requestLengths: number[] = [];
  for (let n = 0; n < PASSES; n++) {
    const pass = await httpPass(s, files, serverUrl, serverPid, pgDir, db, stats);
    if (n === 0)
      requestLengths = await writeLogicalFile(s, dir, files, iterations, pass.runId, logicalFile);
    const perRequest = s.sender ? undefined : requestLengths;
    passes.push({
      ...pass,
      ...(await ceilings(db, pgDir, dir, s, pass.runId, logicalFile, perRequest)),
    });
  }
  for (const f of [...files, logicalFile]) await rm(f);
  const byRatio = [...passes].sort((a, b) => ratioOf(a) - ratioOf(b));
  const median = byRatio[Math.floor((byRatio.length - 1) / 2)] as Pass;
  return { ...s, ...median, bytes, ratios: passes.map(ratioOf) };
}

/** The scenario's requests sent into a new run, one after the other, and what that cost. */
async function httpPass(
  s: Scenario,
  files: string[],
  serverUrl: string,
  serverPid: number,
  pgDir: string | undefined,
  db: pg.Pool,
  stats: StatementStats,
) {
  const runId = await createRun(serverUrl, `bench ${s.label}`);
  await checkpoint(db);
  const wal = await walPosition(db);
  await stats.reset();
  // Scraped outside the timed span and its CPU (the scrape after it comes once the packing is waited for).
  const metrics0 = await scrapeMetrics(serverUrl);
  const cpu0 = await cpuSeconds(serverPid);
  const dbCpu0 = await databaseCpu(pgDir);
  const t0 = performance.now();
  const requests = s.sender
    ? await throughSender(serverUrl, runId, files)
    : await postFiles(`${serverUrl}/v1/runs/${runId}/events`, files);
  const httpSeconds = (performance.now() - t0) / 1000;
  const serverCpuSeconds = (await cpuSeconds(serverPid)) - cpu0;
  const httpDatabaseCpuSeconds = await databaseCpuSince(pgDir, dbCpu0);
  const httpWalBytes = await walSince(db, wal);
  let packing: Result['packing'];
  if (process.env.CREDITLAB_PACK_ITERATIONS !== 'on-read') {
    await packingDone(db, runId);
    packing = {
      lagSeconds: (performance.now() - t0) / 1000 - httpSeconds,
      serverCpuSeconds: (await cpuSeconds(serverPid)) - cpu0,
      databaseCpuSeconds: await databaseCpuSince(pgDir, dbCpu0),
    };
  }
  const breakdown = appendBreakdown(metrics0, await scrapeMetrics(serverUrl));
  const statements = await stats.top(STATEMENTS_SHOWN);
  const count = async (table: string) =>
    Number(
      (await db.query(`SELECT count(*) FROM ${table} WHERE run_id = $1`, [runId])).rows[0].count,
    );
  return {
    runId,
    requests,
    steps: await count('steps'),
    distinctTexts: await count('texts'),
    httpSeconds,
    serverCpuSeconds,
    packing,
    httpWalBytes,
    httpDatabaseCpuSeconds,
    statements,
    breakdown,
  };
}

/**
 * The logical rows of the scenario's steps, for the logical COPY (`runId` fills their run column);
 * returns the bytes of each request's rows, in order (`iterations`: how many each request holds).
 */
async function writeLogicalFile(
  s: Scenario,
  dir: string,
  files: string[],
  iterations: number[],
  runId: string,
  out: string,
): Promise<number[]> {
  if (!s.columnar) return await writeLogicalRows(files, runId, out);
  // The same steps (the generator is seeded), as step objects, which the logical rows are read from:
  // one file per iteration, since objects fill a request of so many bytes with fewer iterations.
  const rowFiles = (
    await writeRequests(dir, {
      ...s,
      label: `${s.label}-rows`,
      columnar: false,
      requestBytes: undefined,
    })
  ).files;
  const perIteration = await writeLogicalRows(rowFiles, runId, out);
  for (const f of rowFiles) await rm(f);
  if (perIteration.length !== iterations.reduce((a, b) => a + b, 0))
    throw new Error(
      `${s.label}: ${perIteration.length} iterations as objects, requests hold others`,
    );
  let next = 0;
  return iterations.map((n) => {
    let bytes = 0;
    for (const end = next + n; next < end; next++) bytes += perIteration[next] as number;
    return bytes;
  });
}

/** The ceilings and the COPY a transaction per request, measured right after a pass on the same database. */
async function ceilings(
  db: pg.Pool,
  pgDir: string | undefined,
  dir: string,
  s: Scenario,
  runId: string,
  logicalFile: string,
  /** The bytes of each request's logical rows, for the COPY a request at a time (none: not timed). */
  requestLengths: number[] | undefined,
) {
  const storedFile = path.join(dir, `${s.label}-stored.copy`);
  const client = await db.connect();
  try {
    const logical = await timeCopy(client, pgDir, CREATE_LOGICAL, copyWhole(client, logicalFile));
    const requestCopySeconds = requestLengths
      ? (
          await timeCopy(
            client,
            pgDir,
            CREATE_LOGICAL,
            copyPerRequest(client, logicalFile, requestLengths),
          )
        ).seconds
      : undefined;
    await pipeline(
      client.query(copyTo(`COPY (SELECT * FROM step_slices WHERE run_id = '${runId}') TO STDOUT`)),
      createWriteStream(storedFile),
    );
    const stored = await timeCopy(
      client,
      pgDir,
      'CREATE TABLE ingest_ceiling (LIKE step_slices INCLUDING ALL)',
      copyWhole(client, storedFile),
    );
    await rm(storedFile);
    return {
      logicalDatabaseCpuSeconds: logical.databaseCpuSeconds,
      logicalCopySeconds: logical.seconds,
      logicalWalBytes: logical.walBytes,
      storedCopySeconds: stored.seconds,
      requestCopySeconds,
    };
  } finally {
    client.release();
  }
}

/**
 * Which forms of the steps to send, in this order: `rows` (one object per step), `columnar`, or both;
 * `+extra` (`rows+extra`, `columnar+extra`) gives every step two fields beyond rollout-batch/v1.
 */
const FORMS = (process.env.BENCH_INGEST_FORMS ?? 'rows,columnar').split(',');

/**
 * How the steps go into requests, in this order: `iteration` (one request per iteration, as a
 * trainer sends each when it ends and waits for the answer), a size such as `32MiB` (iterations
 * together up to that size, as both clients send a backlog: the Python client's max_request_bytes
 * is 32 MiB by default), or `sender` (each iteration handed to the TypeScript client's background
 * sender, which makes the requests).
 */
const REQUESTS = (process.env.BENCH_INGEST_REQUESTS ?? 'iteration,32MiB,sender')
  .split(',')
  .map((r): Pick<Scenario, 'requestBytes' | 'sender'> => {
    if (r === 'iteration') return {};
    if (r === 'sender') return { sender: true };
    const mib = /^(\d+)MiB$/.exec(r);
    if (!mib)
      throw new Error(
        `BENCH_INGEST_REQUESTS: "iteration", "sender" or a size such as 32MiB, got "${r}"`,
      );
    return { requestBytes: Number(mib[1]) * 2 ** 20 };
  });

const mibLabel = (bytes: number) => `${fmt(bytes / 2 ** 20, 0)} MiB requests`;

/**
 * The scenarios: every size of BENCH_INGEST_SIZES without embeddings, then one with them; each in
 * every form and every way of making requests.
 */
function scenarios(): Scenario[] {
  // In the order given, so that either form can go first (the later one meets a larger database).
  const every = (s: Scenario): Scenario[] =>
    FORMS.flatMap((form) =>
      REQUESTS.map(({ requestBytes, sender }) => {
        const [shape, ...flags] = form.split('+');
        const columnar = shape === 'columnar';
        const extraFields = flags.includes('extra');
        const label = [s.label];
        if (columnar) label.push('columnar');
        if (extraFields) label.push('extra fields');
        if (requestBytes !== undefined) label.push(mibLabel(requestBytes));
        if (sender) label.push("client's sender");
        return { ...s, label: label.join(', '), columnar, extraFields, requestBytes, sender };
      }),
    );
  return [
    ...SIZES.flatMap((steps) => every({ label: 'no-embeddings', steps, embeddingDim: 0 })),
    ...every({ label: 'embeddings-256', steps: EMBEDDED_STEPS, embeddingDim: 256 }),
  ].filter((s) => s.steps > 0); // BENCH_INGEST_EMBEDDING_STEPS=0 leaves the embeddings out
}

/** What is measured and against what, for the report. */
const WORKLOAD = (
  database: string,
) => `A synthetic run (tasks of G = 8 rollouts of up to 50 steps over 20 recurring states, observations of about
200 characters, NLL, critic value and sometimes token log-probs on every step; embeddings sent as base64
float32, as both clients send them) is written as NDJSON and streamed through
\`POST /v1/runs/{id}/events\` of a server process on ${database}, one request after the other
(each all-or-nothing): one request per iteration of 16 tasks (about 1,500 steps), as a trainer that sends each
iteration when it ends and waits for the answer; in scenarios marked "… MiB requests", iterations together in
requests of up to that size, as a backlog is sent (an import, \`creditlab sync\`); in scenarios marked "client's
sender", each iteration handed in turn to the TypeScript client's background sender (\`client.sender(runId).log\`,
as a trainer that goes on with its next iteration), which sends what queued while its last request was out, up
to 32 MiB per request, as the Python client's sender does: here, iterations come faster than the server stores
them, so its requests grow. "HTTP" is end to end: parsing, validation, the text dictionary,
groups and trajectories, the event log and the COPY of the steps, commit. Scenarios marked "columnar" send
the same steps with each event's steps as columns ([columnar steps](events.md#columnar-steps)) instead of one
JSON object per step. Each form is sent once first, untimed (50,000 steps into a run of its own: a lab's server
is long running, and a fresh process's first requests pay for compiling the ingest path), and every timed phase
(the HTTP ingest, each ceiling) starts from a \`CHECKPOINT\`, so that none pays for the pages another dirtied.

Two ceilings are measured right after, in the same database. **Logical COPY** loads the same steps as a lab
would with no server: one plain \`COPY\` of rows (run, iteration, group id, trajectory id, index, state and
action text inline, reward, NLL, value, and the vectors) into a table with no index and no foreign key — the
figure the goal (HTTP ≥ 0.5 × logical COPY) is stated against. **Stored-rows COPY** loads the step rows the
server itself wrote (one row per slice of a trajectory's steps, text ids, not texts) into a copy of its
\`step_slices\` table with its primary key: what the steps projection alone would cost. Beside them, not a goal:
**logical COPY, a transaction per request** loads the logical rows again cut where the scenario's requests are
(one iteration, or up to 32 MiB of NDJSON), each in a transaction of its own (\`BEGIN\`, \`COPY\`, \`COMMIT\`) and
the next sent once that one has committed, as the server answers a request once it has: what that cadence costs
PostgreSQL itself, before any server work ("its ÷ logical"), and HTTP against it. Not measured for the client's
sender, whose requests are cut as it goes. It is timed once per pass, right after the one COPY, and the row shows
the pass chosen by HTTP ÷ logical: where a scenario is one request, the two COPYs do the same work and have differed
by up to a fifth, so read "its ÷ logical" to about that.

Each scenario is run several times (\`BENCH_INGEST_PASSES\`, three by default), each time into a new run with the
ceilings measured right after: one pass's figures swing on a machine shared with other work (the logical COPY of one
scenario has measured 220k and 378k steps/s on two runs of the same day), so a row shows the pass
with the median HTTP ÷ logical ratio (of an even number of passes, the lower of the middle two), and the ratio's range over the passes in parentheses.`;

const SAME_WORKLOAD = (database: string) =>
  `The workload, the ceilings and the columns are those of the ingest section above; here the server\nand both ceilings use ${database}.`;

/** The command as run: the sizes and database that were asked for (the database's URL elided). */
function commandLine(): string {
  const command = benchCommand('bench:ingest', [
    'BENCH_INGEST_SIZES',
    'BENCH_INGEST_EMBEDDING_STEPS',
    'BENCH_INGEST_FORMS',
    'BENCH_INGEST_REQUESTS',
    'BENCH_INGEST_PASSES',
  ]);
  if (process.env.BENCH_DATABASE_URL === undefined) return command;
  return command.replace('npm run', 'BENCH_DATABASE_URL=… npm run');
}

const STATEMENTS_SHOWN = 12;

/**
 * The database's time during the HTTP ingest, statement by statement, for the largest scenario
 * without embeddings sent as columns a request per iteration (or the last such one run).
 */
function statementsSection(results: Result[]): string {
  const plain = results.filter(
    (r) =>
      r.embeddingDim === 0 && r.requestBytes === undefined && !r.sender && r.statements.length > 0,
  );
  const r = plain.filter((x) => x.columnar).sort((a, b) => b.steps - a.steps)[0] ?? plain.at(-1);
  if (!r)
    return '\nPer-statement figures need pg_stat_statements, which this PostgreSQL does not preload.\n';
  const total = r.statements.reduce((t, x) => t + x.ms, 0);
  const lines = r.statements.map(
    (x) =>
      `| \`${x.statement.replace(/\|/g, '\\|')}${x.statement.length === STATEMENT_CHARS ? '…' : ''}\` | ${x.calls.toLocaleString('en')} | ${fmt((x.ms * 1000) / r.steps, 2)} µs | ${fmt((100 * x.ms) / total, 0)} % | ${fmt(x.walBytes / r.steps, 0)} B |`,
  );
  return `
Where PostgreSQL's time went during the HTTP ingest of the ${r.label} scenario at ${r.steps.toLocaleString('en')} steps,
statement by statement (\`pg_stat_statements\`, which the benchmarks' embedded PostgreSQL preloads; its ${STATEMENTS_SHOWN}
costliest statements, ${fmt((total * 1000) / r.steps, 2)} µs per step in all). Execution time is wall time inside PostgreSQL: a
COPY from the server includes the time the server takes to send its rows, a COPY to it the time it takes to read
them. Packing for recompute is the \`INSERT INTO iteration_columns\`, and with \`on-complete\` also the
background pass's \`COPY (SELECT … FROM step_slices …) TO STDOUT\`, which reads the steps back.

| statement | calls | time per step | share | WAL per step |
|---|---:|---:|---:|---:|
${lines.join('\n')}
`;
}

/** Milliseconds, to a precision that suits their size (a request of 1,500 steps or of 32 MiB). */
const ms = (seconds: number) => {
  if (Number.isNaN(seconds)) return 'n/a';
  const x = seconds * 1000;
  return fmt(x, x >= 100 ? 0 : x >= 10 ? 1 : 2);
};

/**
 * Where each scenario's requests spent their time, in milliseconds per request: the appender's
 * phases (creditlab_append_phase_seconds), the rest of the server's handling, and the time between
 * one answer and the next request's end (the benchmark posting it, and the network).
 */
function breakdownSection(results: Result[]): string {
  const rows = results.map((r) => {
    const b = r.breakdown;
    const wall = r.httpSeconds / r.requests;
    return `| ${r.label} | ${r.steps.toLocaleString('en')} | ${b.requests} | ${ms(wall)} | ${APPEND_PHASES.map((p) => ms(b.phases[p])).join(' | ')} | ${ms(b.http - b.append)} | ${ms(wall - b.http)} |`;
  });
  return `
Where a request's time went, in milliseconds per request (means over the scenario's requests), from the
server's own clock (\`creditlab_append_phase_seconds\` on \`/metrics\`, scraped before and after the HTTP ingest;
[the phases](architecture.md#where-an-append-spends-its-time)): the phases split the time in the appender with
nothing counted twice, so PostgreSQL writing one chunk while the next is projected counts as projection, and
the writes show only where the request waits for them. "Rest of handling" is the server's HTTP handling
outside the appender (routing, the key, the answer); "between requests" is the rest of the wall time: the
benchmark posting the next body from its file and the network.

| scenario | steps | requests | per request | ${APPEND_PHASES.join(' | ')} | rest of handling | between requests |
|---|---:|---:|---:|${APPEND_PHASES.map(() => '---:').join('|')}|---:|---:|
${rows.join('\n')}
`;
}

/** The cells of the packing columns: lag, then CPU per step until packed (n/a when nothing packs at ingest). */
function packingCells(r: Result, us: (seconds: number, steps: number) => string): string {
  if (!r.packing) return 'n/a | n/a | n/a';
  const p = r.packing;
  return `${fmt(p.lagSeconds, 2)} s | ${us(p.serverCpuSeconds, r.steps)} | ${us(p.databaseCpuSeconds, r.steps)}`;
}

/** The per-request COPY's cells: its rate, it over the one COPY, HTTP over it ('—' for the sender). */
function perRequestCells(r: Result): string {
  const t = r.requestCopySeconds;
  if (t === undefined) return '— | — | —';
  return `${kSteps(r.steps, t)} | ${fmt(r.logicalCopySeconds / t)} | ${fmt(t / r.httpSeconds)}`;
}

/** The range of the passes' ratios, when there were several. */
const spread = (ratios: number[]) =>
  ratios.length < 2 ? '' : ` (${fmt(Math.min(...ratios))}–${fmt(Math.max(...ratios))})`;

const kSteps = (steps: number, seconds: number) => `${fmt(steps / seconds / 1000, 1)}k`;

async function main(): Promise<void> {
  const bench = await startBenchServer({});
  const { server, pool: db, dir } = bench;
  const stats = await StatementStats.open(db);
  const results: Result[] = [];
  try {
    await warmUp(scenarios(), server.url, dir);
    for (const s of scenarios()) {
      const r = await runScenario(
        s,
        server.url,
        server.process.pid as number,
        bench.pgDataDir,
        db,
        dir,
        stats,
      );
      results.push(r);
      console.log(
        `${r.label} ${r.steps}: HTTP ${kSteps(r.steps, r.httpSeconds)} steps/s (server CPU ${fmt((r.serverCpuSeconds / r.steps) * 1e6, 1)} µs/step, database CPU ${fmt((r.httpDatabaseCpuSeconds / r.steps) * 1e6, 1)} µs/step, WAL ${fmt(r.httpWalBytes / r.steps, 0)} B/step); logical COPY ${kSteps(r.steps, r.logicalCopySeconds)} (database CPU ${fmt((r.logicalDatabaseCpuSeconds / r.steps) * 1e6, 1)} µs/step, WAL ${fmt(r.logicalWalBytes / r.steps, 0)} B/step); stored-rows COPY ${kSteps(r.steps, r.storedCopySeconds)}${r.requestCopySeconds === undefined ? '' : `; logical COPY a transaction per request ${kSteps(r.steps, r.requestCopySeconds)}`}${r.packing ? `; packed ${fmt(r.packing.lagSeconds, 2)} s after the last answer, server ${fmt((r.packing.serverCpuSeconds / r.steps) * 1e6, 1)} and database ${fmt((r.packing.databaseCpuSeconds / r.steps) * 1e6, 1)} µs/step until then` : ''}`,
      );
    }
  } finally {
    await bench.close();
  }
  const us = (seconds: number, steps: number) =>
    Number.isNaN(seconds) ? 'n/a' : `${fmt((seconds / steps) * 1e6, 1)} µs`;
  const rows = results.map(
    (r) =>
      `| ${r.label} | ${r.steps.toLocaleString('en')} | ${r.requests} | ${fmt(r.bytes / r.steps, 0)} B | ${kSteps(r.steps, r.httpSeconds)} | ${kSteps(r.steps, r.logicalCopySeconds)} | **${fmt(r.logicalCopySeconds / r.httpSeconds)}**${spread(r.ratios)} | ${kSteps(r.steps, r.storedCopySeconds)} | ${fmt(r.storedCopySeconds / r.httpSeconds)} | ${perRequestCells(r)} |`,
  );
  const costs = results.map(
    (r) =>
      `| ${r.label} | ${r.steps.toLocaleString('en')} | ${us(r.serverCpuSeconds, r.steps)} | ${us(r.httpDatabaseCpuSeconds, r.steps)} | ${fmt(r.httpWalBytes / r.steps, 0)} B | ${packingCells(r, us)} | ${us(r.logicalDatabaseCpuSeconds, r.steps)} | ${fmt(r.logicalWalBytes / r.steps, 0)} B |`,
  );
  const external = process.env.BENCH_DATABASE_URL !== undefined;
  writeSection(
    external ? 'ingest-database-url' : 'ingest',
    `
## Ingest${external ? ' into a separate PostgreSQL' : ''} (\`${external ? 'BENCH_DATABASE_URL=… ' : ''}npm run bench:ingest\`)

Machine: ${machineLine()}. Run on ${new Date().toISOString().slice(0, 10)}.
Command: \`${commandLine()}\` (\`BENCH_INGEST_SIZES\`, default 100000,1000000; \`BENCH_INGEST_EMBEDDING_STEPS\`, default 200,000; \`BENCH_INGEST_FORMS\`, default rows,columnar, either with +extra for steps with two fields beyond rollout-batch/v1; \`BENCH_INGEST_REQUESTS\`, default iteration,32MiB,sender; \`BENCH_INGEST_PASSES\`, default 3).

${external ? SAME_WORKLOAD(bench.description) : WORKLOAD(bench.description)}

| scenario | steps | requests | NDJSON per step | HTTP steps/s | logical COPY steps/s | HTTP ÷ logical | stored-rows COPY steps/s | HTTP ÷ stored | logical COPY, a transaction per request: steps/s | its ÷ logical | HTTP ÷ it |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}
${PASSES > 1 ? `\nEach scenario ran ${PASSES} times; its row is its median pass (range of the ratio in parentheses).\n` : ''}
What each step costs, whatever else the machine is doing: CPU of the server process and of PostgreSQL (all its
processes) per step, and the write-ahead log written per step (every byte the database wrote), for the HTTP
ingest and for the logical COPY. The HTTP figures end at the last answer; packing for recompute
(\`CREDITLAB_PACK_ITERATIONS\`, here ${process.env.CREDITLAB_PACK_ITERATIONS ?? 'on-append, the default'}) may still be
under way then, so the next columns wait until every complete iteration is packed: how long after the last answer
that was, and the server's and PostgreSQL's CPU per step from the first request until then.

| scenario | steps | HTTP: server CPU | HTTP: database CPU | HTTP: WAL | packed after | until packed: server CPU | until packed: database CPU | logical COPY: database CPU | logical COPY: WAL |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${costs.join('\n')}
${breakdownSection(results)}${statementsSection(results)}`,
  );
  console.log('wrote docs/benchmarks.md');
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
