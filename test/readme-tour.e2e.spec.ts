import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildSchema, parse, validate } from 'graphql';
import { startCommand, type CliResult } from './support/cli';
import { freePort } from './support/free-port';
import { createTestDatabase } from './support/test-database';
import { api, spawnServer, type ServerProcess } from './support/test-server';

/**
 * The README's tour on a server configured unlike the README's defaults: another port, another
 * credentials file, the key the server made on its first start. The tour starts with
 * `eval "$(npm run -s admin -- env)"` and uses $CREDITLAB_URL and $CREDITLAB_API_KEY from then on.
 */
const ROOT = path.resolve(__dirname, '..');
let server: ServerProcess;
let port: number;
let credentials: string;
/** What the README's first command exported. */
let exported: { url: string; key: string };

/** A shell script as a user types it, with only CREDITLAB_CREDENTIALS set (as the server had it). */
const shell = (script: string): Promise<CliResult> =>
  startCommand('bash', ['-c', script], { CREDITLAB_CREDENTIALS: credentials }).result;

/** The README's bash blocks. */
async function readmeBash(): Promise<string[]> {
  const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  return [...readme.matchAll(/```bash\n([^]*?)```/g)].map((m) => m[1] as string);
}

/** The tour's jq line: one rollouts.appended event with the example's groups, appended to `runId`. */
async function appendExample(runId: string): Promise<Response> {
  const example = JSON.parse(
    await readFile(path.join(ROOT, 'examples/get-the-key.json'), 'utf8'),
  ) as { groups: unknown };
  const event = {
    id: randomUUID(),
    type: 'rollouts.appended',
    data: { iteration: 0, groups: example.groups },
  };
  return api(
    `${exported.url}/v1/runs/${runId}/events`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/x-ndjson' },
      body: `${JSON.stringify(event)}\n`,
    },
    exported.key,
  );
}

beforeAll(async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'creditlab-tour-'));
  credentials = path.join(dir, 'not-the-default', 'credentials.json');
  port = await freePort();
  server = await spawnServer({
    DATABASE_URL: await createTestDatabase(),
    PORT: String(port),
    CREDITLAB_ADMIN_KEY: undefined, // the key is the one the first start writes
    CREDITLAB_CREDENTIALS: credentials,
  });
  const env = await shell(
    'eval "$(npm run -s admin -- env)" && printf "%s\\n%s\\n" "$CREDITLAB_URL" "$CREDITLAB_API_KEY"',
  );
  expect(env).toMatchObject({ code: 0, stderr: '' });
  const [url = '', key = ''] = env.stdout.trim().split('\n');
  exported = { url, key };
});

afterAll(() => server.stop());

test('eval "$(npm run -s admin -- env)" exports the server and the key its first start wrote', async () => {
  const saved = JSON.parse(await readFile(credentials, 'utf8')) as { url: string; apiKey: string };
  expect(exported).toEqual({ url: server.url, key: saved.apiKey });
  expect(new URL(exported.url).port).toBe(String(port));
});

test('the tour’s requests, sent to $CREDITLAB_URL with $CREDITLAB_API_KEY, answer as the README says', async () => {
  const [tour] = (await readmeBash()).filter((b) => b.includes('RUN=$(curl'));
  expect(tour).toMatch(/^eval "\$\(npm run -s admin -- env\)"/);
  const body = /-d '(\{[^']*\})'/.exec(tour!)![1]!;
  const created = await api(
    `${exported.url}/v1/runs`,
    { method: 'POST', headers: { 'content-type': 'application/json' }, body },
    exported.key,
  );
  expect(created.status).toBe(201);
  const { id } = (await created.json()) as { id: string };
  const appended = await appendExample(id);
  const expected = /# (\{"accepted".*\})/.exec(tour!)![1]!;
  expect(await appended.json()).toEqual(JSON.parse(expected));
});

test('the trainer and npm run admin need no --server or --key', async () => {
  const trained = await shell(
    'eval "$(npm run -s admin -- env)" && npm run -s train -- --iterations 2 --tasks 2 --group-size 2',
  );
  expect(trained.code).toBe(0);
  const runId = trained.stdout.trim();
  const res = await api(
    `${server.url}/graphql`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: `{ run(id: "${runId}") { status } }` }),
    },
    exported.key,
  );
  expect(await res.json()).toEqual({ data: { run: { status: 'COMPLETED' } } });
  // without the exports, straight from the credentials file
  const whoami = await shell('npm run -s admin -- whoami');
  expect(whoami).toMatchObject({ code: 0, stdout: expect.stringContaining(`at ${server.url}`) });
});

test('the README’s TypeScript example stores every iteration it logs through the sender', async () => {
  const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  const [example] = [...readme.matchAll(/```ts\n([^]*?)```/g)]
    .map((m) => m[1] as string)
    .filter((b) => b.includes('client.sender('));
  const iterations = Number(/for \(let it = 0; it < (\d+); it\+\+\)/.exec(example ?? '')?.[1]);
  expect(iterations).toBeGreaterThan(1);
  // Inside the checkout, as the README says, for the @creditlab/* paths (tmp/ is ignored by git).
  const file = path.join(ROOT, 'tmp', `readme-example-${process.pid}.ts`);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, example!);
  try {
    const ran = await shell(`eval "$(npm run -s admin -- env)" && npx tsx ${file}`);
    expect(ran).toMatchObject({ code: 0, stderr: '' });
    expect(ran.stdout).toMatch(new RegExp(`^${iterations} events stored in \\d+ requests\n$`));
  } finally {
    await rm(file, { force: true });
  }
  const res = await api(
    `${server.url}/graphql`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        query:
          '{ runs(first: 1, filter: { nameContains: "run 1" }) { nodes { iterations { index stepCount } } } }',
      }),
    },
    exported.key,
  );
  const exampleBatch = JSON.parse(
    await readFile(path.join(ROOT, 'examples/get-the-key.json'), 'utf8'),
  ) as { groups: { trajectories: { steps: unknown[] }[] }[] };
  const steps = exampleBatch.groups
    .flatMap((g) => g.trajectories)
    .reduce((n, t) => n + t.steps.length, 0);
  const stored = Array.from({ length: iterations }, (_, index) => ({ index, stepCount: steps }));
  expect(await res.json()).toEqual({ data: { runs: { nodes: [{ iterations: stored }] } } });
});

test('a request without a key is told where this server wrote its key', async () => {
  const res = await fetch(`${server.url}/v1/runs`, { method: 'POST', body: '{}' });
  expect(res.status).toBe(401);
  const { message } = (await res.json()) as { message: string };
  expect(message).toContain(credentials);
  expect(message).not.toContain('~/.creditlab');
});

test('every curl in the README goes to $CREDITLAB_URL with $CREDITLAB_API_KEY', async () => {
  const blocks = await readmeBash();
  const curls = blocks.flatMap((b) => b.split('\n')).filter((l) => /\bcurl /.test(l));
  expect(curls.length).toBeGreaterThanOrEqual(4);
  for (const line of curls) {
    expect(line).toMatch(/curl -s (-X POST )?"\$CREDITLAB_URL\//);
    expect(line).toContain('-H "authorization: Bearer $CREDITLAB_API_KEY"');
  }
  // each block with a curl sets the variables first, or follows one that does (Set up, the tour)
  expect(blocks.filter((b) => b.startsWith('eval "$(npm run -s admin -- env)"'))).toHaveLength(2);
});

test('every GraphQL example in the README is valid against the schema the server serves', async () => {
  const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/```graphql\n([^]*?)```/g)].map((m) => m[1] as string);
  expect(blocks.length).toBeGreaterThanOrEqual(4);
  const schema = buildSchema(await readFile(path.join(ROOT, 'schema.gql'), 'utf8'));
  for (const block of blocks)
    // several one-line operations share a block; each is a document of its own
    for (const doc of block.includes('\nmutation') ? block.split(/\n(?=query|mutation)/) : [block])
      expect([doc, validate(schema, parse(doc)).map((e) => e.message)]).toEqual([doc, []]);
});

test('the README’s per-step comparison query runs on a fresh run (every set new) without errors', async () => {
  const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  const [steps] = [...readme.matchAll(/```graphql\n([^]*?)```/g)]
    .map((m) => m[1] as string)
    .filter((b) => b.startsWith('query Steps'));
  const created = await api(
    `${exported.url}/v1/runs`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'steps query', env: 'household', method: 'gigpo' }),
    },
    exported.key,
  );
  const { id } = (await created.json()) as { id: string };
  expect((await appendExample(id)).status).toBe(200);
  const res = await api(
    `${exported.url}/graphql`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: steps, variables: { run: id } }),
    },
    exported.key,
  );
  const body = (await res.json()) as {
    errors?: unknown;
    data: {
      run: { groups: { nodes: { trajectories: { steps: { grpo: number; why: object }[] }[] }[] } };
    };
  };
  expect(body.errors).toBeUndefined();
  const first = body.data.run.groups.nodes[0]!.trajectories[0]!.steps;
  expect(first.map((s) => typeof s.grpo)).toEqual(['number', 'number', 'number']);
  expect(Object.keys(first[0]!.why)).toContain('lambda');
});

test('the README’s gql helper sends a saved query with its variables: the runs query, on the tour’s run', async () => {
  const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  const [runsQuery] = [...readme.matchAll(/```graphql\n([^]*?)```/g)]
    .map((m) => m[1] as string)
    .filter((b) => b.startsWith('query Runs('));
  const [helperBlock] = (await readmeBash()).filter((b) => b.startsWith('gql() {'));
  // The function as written, without the block's example calls (files a user saves first).
  const helper = /^gql\(\) \{[^]*?\n\}\n/.exec(helperBlock!)![0];
  const created = await api(
    `${exported.url}/v1/runs`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'demo helper',
        project: 'demo',
        env: 'e',
        method: 'gigpo',
        tags: ['tour'],
      }),
    },
    exported.key,
  );
  const { id } = (await created.json()) as { id: string };
  expect((await appendExample(id)).status).toBe(200);
  const dir = await mkdtemp(path.join(tmpdir(), 'creditlab-gql-'));
  await writeFile(path.join(dir, 'runs.graphql'), runsQuery!);
  const sent = await shell(
    `eval "$(npm run -s admin -- env)" && ${helper} cd '${dir}' && RUN=${id} && gql runs.graphql "{\\"runs\\": [\\"$RUN\\"]}"`,
  );
  expect(sent).toMatchObject({ code: 0, stderr: '' });
  const answer = JSON.parse(sent.stdout) as {
    errors?: unknown;
    data: { runs: { nodes: { id: string }[] }; metricSeries: { runName: string }[] };
  };
  expect(answer.errors).toBeUndefined();
  expect(answer.data.runs.nodes.map((r) => r.id)).toContain(id);
  expect(answer.data.metricSeries.map((s) => s.runName)).toEqual(['demo helper']);
});
