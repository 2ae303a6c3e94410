/**
 * `npx tsx bench/python-client.bench.ts`: the Python client (clients/python) against a server process on
 * an embedded PostgreSQL. For synthetic iterations without embeddings and with 256- and 4,096-dimensional
 * ones (plus 24 token log-probs per step), bench/python-client.bench.py measures steps/s through
 * `run.log_rollouts` + `run.flush`, the raw HTTP ingest rate of the same events packed into requests of up
 * to max_request_bytes, the request counts of both, the time the caller
 * spent inside `log_rollouts`, and bytes per step as JSON numbers and in the compact encoding, with the
 * steps as objects and as columns (the client's default). Writes its section of docs/benchmarks.md.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fmt, machineLine, writeSection } from './support/bench-report';
import { startBenchServer } from './support/bench-server';

const ROOT = path.resolve(__dirname, '..');
const SCENARIOS = [
  ['no embeddings', 0, Number(process.env.BENCH_PY_STEPS ?? 100_000)],
  ['256-d embeddings', 256, Number(process.env.BENCH_PY_256_STEPS ?? 40_000)],
  ['4096-d embeddings', 4096, Number(process.env.BENCH_PY_4096_STEPS ?? 6_400)],
] as const;

interface Timing {
  seconds: number;
  requests: number;
  bytes: number;
}
interface Result {
  label: string;
  dim: number;
  steps: number;
  compact: boolean;
  columnar: boolean;
  client?: Timing & { blocked: number };
  raw?: Timing;
  refused?: string;
  bytesPerStep?: number;
}

function measure(url: string, key: string): Result[] {
  const args = SCENARIOS.map(
    ([label, dim, steps]) => `${label.replace(/ /g, '_')}:${dim}:${steps}`,
  );
  const run = spawnSync('python3', ['bench/python-client.bench.py', url, key, ...args], {
    cwd: ROOT,
    env: { ...process.env, PYTHONPATH: path.join(ROOT, 'clients/python/src') },
    encoding: 'utf8',
    maxBuffer: 1 << 26,
    timeout: 3_600_000,
  });
  if (run.status !== 0) throw new Error(`python3 exited ${run.status}:\n${run.stderr}`);
  return run.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Result)
    .map((r) => ({ ...r, label: r.label.replace(/_/g, ' ') }));
}

/** `Python 3.11.7, numpy 2.4.6`: the interpreter the measurement ran on. */
function pythonLine(): string {
  const probe = spawnSync(
    'python3',
    [
      '-c',
      'import sys, numpy; print(f"Python {sys.version.split()[0]}, numpy {numpy.__version__}")',
    ],
    { encoding: 'utf8', timeout: 60_000 },
  );
  return probe.stdout.trim() || 'Python 3';
}

function row(r: Result): string {
  const encoding = r.dim === 0 ? '—' : r.compact ? 'compact (base64 float32)' : 'JSON numbers';
  const form = r.columnar ? 'columns' : 'objects';
  if (!r.client || !r.raw) {
    const perStep = `${fmt(r.bytesPerStep ?? 0, 0)} B`;
    return `| ${r.label} | ${form} | ${encoding} | ${r.steps.toLocaleString('en')} | ${perStep} | refused by this server | | | | |`;
  }
  const client = r.steps / r.client.seconds;
  const raw = r.steps / r.raw.seconds;
  const rate = (x: number) => Math.round(x).toLocaleString('en');
  return `| ${r.label} | ${form} | ${encoding} | ${r.steps.toLocaleString('en')} | ${fmt(r.raw.bytes / r.steps, 0)} B | ${rate(client)} | ${rate(raw)} | ${fmt(client / raw)} | ${r.client.requests} / ${r.raw.requests} | ${fmt((100 * r.client.blocked) / r.client.seconds, 0)} % |`;
}

/** How much smaller the compact encoding makes a step, per embedding size. */
function savings(results: Result[]): string {
  const parts = results
    .filter((r) => r.dim > 0 && r.compact && !r.columnar)
    .map((c) => {
      const json = results.find((r) => r.dim === c.dim && !r.compact && !r.columnar);
      const size = (r?: Result) => (r?.raw ? r.raw.bytes / r.steps : (r?.bytesPerStep ?? NaN));
      return `${fmt(size(json) / size(c), 1)}× smaller at ${c.dim} dimensions`;
    });
  return parts.length ? `The compact encoding makes a step ${parts.join(' and ')}.` : '';
}

/** Steps as columns against steps as objects (both compact): the server's rate and the caller's time. */
function formsCompared(results: Result[]): string {
  const parts = results
    .filter((r) => r.columnar && r.raw && r.client)
    .map((c) => {
      const objects = results.find((r) => r.dim === c.dim && r.compact && !r.columnar);
      if (!objects?.raw || !objects.client) return '';
      const rate = (r: Result) => r.steps / (r.raw as Timing).seconds;
      const busy = (r: Result) => (r.client as Timing & { blocked: number }).blocked / r.steps;
      return `${c.label}: raw HTTP ${fmt(rate(c) / rate(objects), 2)}× the rate, the caller ${fmt((busy(c) / busy(objects)) * 100, 0)} % of the time in \`log_rollouts\``;
    })
    .filter(Boolean);
  return parts.length
    ? `Steps as columns (the default) against steps as objects, both compact: ${parts.join('; ')}.`
    : '';
}

async function main(): Promise<void> {
  const bench = await startBenchServer({});
  let results: Result[];
  try {
    results = measure(bench.server.url, bench.adminKey);
  } finally {
    await bench.close();
  }
  for (const r of results) console.log(JSON.stringify(r));
  const refused = results.find((r) => r.refused);
  writeSection(
    'python-client',
    `
## Python client (\`npx tsx bench/python-client.bench.ts\`)

Machine: ${machineLine()}, ${pythonLine()}. Run on ${new Date().toISOString().slice(0, 10)}.
Command: \`npx tsx bench/python-client.bench.ts\` (\`BENCH_PY_STEPS\`, default 100,000; \`BENCH_PY_256_STEPS\`, 40,000;
\`BENCH_PY_4096_STEPS\`, 6,400). The script is \`bench/python-client.bench.py\`.

Synthetic iterations (16 tasks × G = 8 rollouts × 20–40 steps, observations of about 200 characters, NLL and
critic value on every step; with embeddings, also 24 token log-probs per step) go through \`run.log_rollouts\`
once per iteration, then \`run.flush()\`: "client" is that whole time (checking and encoding in the caller's
thread, the background sender, HTTP, the server's ingest into an embedded PostgreSQL). "Raw HTTP" posts the
same events, encoded beforehand and packed into requests of up to \`max_request_bytes\` (32 MiB) as the sender
packs a backlog, back to back on one connection: the server's ingest rate for those bytes. "Requests" are the
client's (the sender posts what has queued since its last request, so iterations logged faster than the server
stores them share a request) and raw HTTP's. "Steps as": one JSON object per step (the row form), or each event's steps as columns (the
client's default, \`Client(columnar_steps=…)\`). "Caller busy" is the share of the client time spent inside \`log_rollouts\` (encoding), the
time a trainer's loop is held; the rest overlaps with sending. Client, server and PostgreSQL share this machine's
two cores, so the client's encoding slows the server down here; on a trainer's own machine it would not.

| steps | steps as | floats as | steps sent | NDJSON per step | client steps/s | raw HTTP steps/s | client ÷ raw | requests: client / raw | caller busy |
|---|---|---|---:|---:|---:|---:|---:|---:|---:|
${results.map(row).join('\n')}

${savings(results)}
${formsCompared(results)}
${refused ? `\nRows "refused by this server": the server did not accept the compact encoding yet (${refused.refused?.split(':').slice(0, 2).join(':')}); their size per step is computed by the client.\n` : ''}`,
  );
  console.log('wrote docs/benchmarks.md');
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
