import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { sqlQuery } from './support/sql-query';
import {
  ADMIN_KEY,
  api,
  gql,
  spawnServer,
  startTestServer,
  type ServerProcess,
} from './support/test-server';
import { CreditlabClient } from '@creditlab/client';

let server: ServerProcess & { databaseUrl: string };
let client: CreditlabClient;
let runId: string;

beforeAll(async () => {
  server = await startTestServer({ CREDITLAB_MAX_CHECKPOINT_BYTES: '4096' });
  client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
  runId = (await client.createRun({ name: 'ckpt', env: 'e', method: 'grpo' })).id;
});
afterAll(() => server.stop());

const put = (
  iteration: number,
  body: Uint8Array,
  headers: Record<string, string> = {},
  run: string = runId,
) =>
  api(`${server.url}/v1/runs/${run}/checkpoints/${iteration}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream', ...headers },
    body,
  });

test('an upload is stored byte for byte, listed, recorded as checkpoint.saved once, and downloadable', async () => {
  const bytes = new Uint8Array(3000).map((_, i) => (i * 7) % 251);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const first = await put(4, bytes, { 'x-creditlab-checkpoint-format': 'test/v1' });
  expect(first.status).toBe(201);
  expect(await first.json()).toMatchObject({
    iteration: 4,
    sha256,
    bytes: 3000,
    format: 'test/v1',
  });
  // the same bytes again (a retried upload): acknowledged, nothing new
  expect((await put(4, bytes, { 'x-creditlab-checkpoint-format': 'test/v1' })).status).toBe(200);
  const down = await client.downloadCheckpoint(runId, 4);
  expect(Buffer.from(down.data).equals(Buffer.from(bytes))).toBe(true);
  expect(down).toMatchObject({ format: 'test/v1', sha256 });
  const res = await gql<{
    run: {
      checkpoints: { iteration: number; sha256: string }[];
      events: { nodes: { data: unknown }[] };
    };
  }>(
    server,
    `query($id: ID!) { run(id: $id) { checkpoints { iteration sha256 bytes path }
       events(types: [CHECKPOINT_SAVED]) { nodes { data } } } }`,
    { id: runId },
  );
  expect(res.data!.run.checkpoints).toEqual([
    { iteration: 4, sha256, bytes: 3000, path: `/v1/runs/${runId}/checkpoints/4` },
  ]);
  expect(res.data!.run.events.nodes).toEqual([
    {
      data: {
        iteration: 4,
        uri: `/v1/runs/${runId}/checkpoints/4`,
        sha256,
        bytes: 3000,
        format: 'test/v1',
      },
    },
  ]);
});

test('checkpoints are immutable; bad uploads say what is wrong', async () => {
  await put(7, new Uint8Array([1, 2, 3]));
  const other = await put(7, new Uint8Array([1, 2, 4]));
  expect(other.status).toBe(409);
  expect(await other.json()).toMatchObject({
    error: 'CONFLICT',
    message: expect.stringContaining('immutable'),
  });
  const big = await put(8, new Uint8Array(5000));
  expect(big.status).toBe(413);
  expect(await big.json()).toMatchObject({
    message: expect.stringContaining('CREDITLAB_MAX_CHECKPOINT_BYTES'),
  });
  expect((await put(9, new Uint8Array(0))).status).toBe(400);
  const missing = await api(`${server.url}/v1/runs/${runId}/checkpoints/5`);
  expect(missing.status).toBe(404);
  expect(await missing.json()).toMatchObject({
    message: expect.stringMatching(/no checkpoint 5; it has 4, 7$/),
  });
  // Paths route whatever their case, and a JSON content type does not make the body JSON here.
  const json = await api(`${server.url}/V1/runs/${runId}/Checkpoints/10`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: '{"w":1}',
  });
  expect(json.status).toBe(201);
  const stored = await api(`${server.url}/v1/runs/${runId}/checkpoints/10`);
  expect(await stored.text()).toBe('{"w":1}');
  // Nor when the request names its target in absolute form (PUT http://host/v1/…), as proxies do.
  const absolute = await new Promise<number>((resolve, reject) => {
    const { hostname, port } = new URL(server.url);
    const req = request(
      {
        hostname,
        port,
        method: 'PUT',
        path: `${server.url}/v1/runs/${runId}/checkpoints/11`,
        headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end('{"w":2}');
  });
  expect(absolute).toBe(201);
  const list = (await (await api(`${server.url}/v1/runs/${runId}/checkpoints`)).json()) as {
    iteration: number;
  }[];
  expect(list.map((c) => c.iteration)).toEqual([4, 7, 10, 11]);
});

describe('large checkpoints', () => {
  const MIB = 1024 * 1024;
  let large: ServerProcess & { databaseUrl: string };
  let largeRun: string;
  beforeAll(async () => {
    large = await startTestServer({
      CREDITLAB_MAX_CHECKPOINT_BYTES: String(10 * MIB),
    });
    const c = new CreditlabClient({ url: large.url, apiKey: ADMIN_KEY });
    largeRun = (await c.createRun({ name: 'large', env: 'e', method: 'grpo' })).id;
  });
  afterAll(() => large.stop());

  /** A PUT that declares `length` bytes and sends `first` of them, then waits to be told the rest. */
  const openUpload = (
    iteration: number,
    length: number,
    first: Buffer,
    options: { format?: string; run?: string } = {},
  ) => {
    const run = options.run ?? largeRun;
    const req = request(new URL(`${large.url}/v1/runs/${run}/checkpoints/${iteration}`), {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${ADMIN_KEY}`,
        'content-type': 'application/octet-stream',
        'content-length': String(length),
        'x-creditlab-checkpoint-format': options.format ?? 'application/octet-stream',
      },
    });
    const answer = new Promise<{ status: number; retryAfter?: string; body: unknown }>(
      (resolve, reject) => {
        req.on('response', (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              retryAfter: res.headers['retry-after'],
              body: JSON.parse(text || '{}'),
            }),
          );
        });
        req.on('error', reject);
      },
    );
    answer.catch(() => undefined);
    req.flushHeaders();
    if (first.length) req.write(first);
    return { req, answer };
  };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  test('a checkpoint of several read chunks downloads byte for byte', async () => {
    const bytes = randomBytes(9 * MIB + 123);
    const c = new CreditlabClient({ url: large.url, apiKey: ADMIN_KEY });
    expect((await c.uploadCheckpoint(largeRun, 0, bytes, 'test/v1')).bytes).toBe(bytes.length);
    const res = await api(`${large.url}/v1/runs/${largeRun}/checkpoints/0`);
    expect(res.headers.get('content-length')).toBe(String(bytes.length));
    expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
  });

  /** The parts in the database of `largeRun`'s uploads, by upload. */
  const partsByUpload = async () =>
    (
      await sqlQuery<{ parts: number }>(
        large.databaseUrl,
        `SELECT count(*)::int AS parts FROM checkpoint_parts WHERE run_id = $1 GROUP BY upload_id ORDER BY 1`,
        [largeRun],
      )
    ).map((r) => r.parts);
  /** Polls `read` until `done` holds of its value (the server works while the test waits). */
  const until = async <T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> => {
    let value = await read();
    for (let i = 0; i < 100 && !done(value); i++) {
      await sleep(100);
      value = await read();
    }
    return value;
  };
  const storedParts = async () => (await partsByUpload()).reduce((a, b) => a + b, 0);

  test('an upload is stored part by part as it arrives; one given up leaves nothing behind', async () => {
    const stored = await storedParts();
    const bytes = randomBytes(9 * MIB);
    const given = openUpload(1, bytes.length, bytes.subarray(0, 5 * MIB + 17));
    // Five of its nine parts are in the database while its client has sent five and a bit.
    expect(await until(storedParts, (n) => n === stored + 5)).toBe(stored + 5);
    given.req.destroy();
    expect(await until(storedParts, (n) => n === stored)).toBe(stored);
    // A client that goes away is not a database that went away.
    expect(large.output()).not.toContain('database unavailable');
    expect((await api(`${large.url}/v1/runs/${largeRun}/checkpoints/1`)).status).toBe(404);

    const c = new CreditlabClient({ url: large.url, apiKey: ADMIN_KEY });
    expect((await c.uploadCheckpoint(largeRun, 1, bytes, 'test/v1')).bytes).toBe(bytes.length);
    expect(await storedParts()).toBe(stored + 9);
    expect(Buffer.from((await c.downloadCheckpoint(largeRun, 1)).data).equals(bytes)).toBe(true);
  });

  test('two uploads of one checkpoint at once: the same bytes are one checkpoint, other bytes a conflict; the loser keeps no parts', async () => {
    const same = randomBytes(2 * MIB + 3);
    for (const [iteration, second, format] of [
      [2, same, 'test/v1'],
      [3, randomBytes(same.length), 'test/v1'],
      [5, same, 'test/v2'], // the same bytes under another name: the first one's stands
    ] as const) {
      const before = (await partsByUpload()).length;
      const a = openUpload(iteration, same.length, same.subarray(0, MIB + 1), {
        format: 'test/v1',
      });
      const b = openUpload(iteration, second.length, second.subarray(0, MIB + 1), { format });
      // Both have stored a part, so both are past the check for a stored checkpoint.
      expect((await until(partsByUpload, (p) => p.length === before + 2)).length).toBe(before + 2);
      a.req.end(same.subarray(MIB + 1));
      expect((await a.answer).status).toBe(201);
      b.req.end(second.subarray(MIB + 1));
      const loser = await b.answer;
      if (second === same)
        expect(loser).toMatchObject({
          status: 200,
          body: { bytes: same.length, format: 'test/v1' },
        });
      else
        expect(loser).toMatchObject({
          status: 409,
          body: { error: 'CONFLICT', message: expect.stringContaining('immutable') },
        });
      expect((await until(partsByUpload, (p) => p.length === before + 1)).length).toBe(before + 1);
      const c = new CreditlabClient({ url: large.url, apiKey: ADMIN_KEY });
      expect(Buffer.from((await c.downloadCheckpoint(largeRun, iteration)).data).equals(same)).toBe(
        true,
      );
    }
  });

  test('an upload to a finished run is refused before its body is read', async () => {
    const c = new CreditlabClient({ url: large.url, apiKey: ADMIN_KEY });
    const { id } = await c.createRun({ name: 'finished', env: 'e', method: 'grpo' });
    await c.appendEvents(id, [
      { id: randomUUID(), type: 'run.finished', data: { status: 'completed' } },
    ]);
    // Its headers only: the answer comes without a byte of the 8 MiB it declares.
    const refused = await openUpload(0, 8 * MIB, Buffer.alloc(0), { run: id }).answer;
    expect(refused).toMatchObject({
      status: 409,
      body: {
        error: 'RUN_FINISHED',
        message: expect.stringContaining('is completed'),
        runStatus: 'completed',
      },
    });
  });

  test('the database connection lost while a part is written: 503, the upload keeps no parts, the next goes through', async () => {
    const c = new CreditlabClient({ url: large.url, apiKey: ADMIN_KEY });
    const { id } = await c.createRun({ name: 'cut copy', env: 'e', method: 'grpo' });
    // The second part of this run's uploads is slow to write, long enough to cut its connection.
    await sqlQuery(
      large.databaseUrl,
      `CREATE FUNCTION slow_second_part() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN IF NEW.ord = 1 AND NEW.run_id = '${id}' THEN PERFORM pg_sleep(30); END IF; RETURN NEW; END $$;
       CREATE TRIGGER slow_second_part BEFORE INSERT ON checkpoint_parts
       FOR EACH ROW EXECUTE FUNCTION slow_second_part()`,
    );
    try {
      const bytes = randomBytes(2 * MIB + 1);
      const upload = openUpload(0, bytes.length, bytes, { run: id });
      upload.req.end();
      const copying = async () =>
        sqlQuery<{ pid: number }>(
          large.databaseUrl,
          `SELECT pid FROM pg_stat_activity WHERE query LIKE 'COPY checkpoint_parts%' AND wait_event = 'PgSleep'`,
        );
      const [backend] = await until(copying, (rows) => rows.length === 1);
      await sqlQuery(large.databaseUrl, 'SELECT pg_terminate_backend($1)', [backend!.pid]);
      expect(await upload.answer).toMatchObject({ status: 503 });
      const parts = async () =>
        sqlQuery(large.databaseUrl, 'SELECT ord FROM checkpoint_parts WHERE run_id = $1', [id]);
      expect(await until(parts, (rows) => rows.length === 0)).toEqual([]);
      expect(large.output()).not.toContain('could not delete the parts');
    } finally {
      await sqlQuery(large.databaseUrl, 'DROP TRIGGER slow_second_part ON checkpoint_parts');
    }
    const again = randomBytes(2 * MIB + 1);
    expect((await c.uploadCheckpoint(id, 0, again, 'test/v1')).bytes).toBe(again.length);
    expect(Buffer.from((await c.downloadCheckpoint(id, 0)).data).equals(again)).toBe(true);
  });

  test('parts of uploads cut off over an hour ago are swept when a server starts; recent ones and stored checkpoints stay', async () => {
    const c = new CreditlabClient({ url: large.url, apiKey: ADMIN_KEY });
    const kept = randomBytes(MIB + 9);
    await c.uploadCheckpoint(largeRun, 4, kept, 'test/v1');
    // As a server killed mid-upload leaves them: parts that no checkpoint names.
    const [old, recent] = [randomUUID(), randomUUID()];
    await sqlQuery(
      large.databaseUrl,
      `INSERT INTO checkpoint_parts (run_id, upload_id, ord, data, created_at) VALUES
         ($1, $2, 0, '\\x01', now() - interval '2 hours'), ($1, $2, 1, '\\x02', now() - interval '2 hours'),
         ($1, $3, 0, '\\x03', now() - interval '10 minutes')`,
      [largeRun, old, recent],
    );
    await sqlQuery(
      large.databaseUrl,
      `UPDATE checkpoint_parts SET created_at = now() - interval '3 hours'
       WHERE upload_id = (SELECT upload_id FROM checkpoints WHERE run_id = $1 AND iteration = 4)`,
      [largeRun],
    );
    const uploadsLeft = async () =>
      (
        await sqlQuery<{ upload_id: string }>(
          large.databaseUrl,
          'SELECT DISTINCT upload_id FROM checkpoint_parts WHERE upload_id = ANY($1)',
          [[old, recent]],
        )
      ).map((r) => r.upload_id);
    expect(await uploadsLeft()).toHaveLength(2);
    const second = await spawnServer({ DATABASE_URL: large.databaseUrl });
    try {
      expect(await until(uploadsLeft, (u) => u.length === 1)).toEqual([recent]);
      const swept = 'deleted 2 parts of checkpoint uploads abandoned';
      expect(
        await until(
          async () => second.output(),
          (o) => o.includes(swept),
        ),
      ).toContain(swept);
      expect(Buffer.from((await c.downloadCheckpoint(largeRun, 4)).data).equals(kept)).toBe(true);
    } finally {
      await second.stop();
    }
  });
});

test('a run id typed in capitals is the same run: the same checkpoint, one checkpoint.saved, a lower-case path', async () => {
  const { id } = await client.createRun({ name: 'ckpt caps', env: 'e', method: 'grpo' });
  const bytes = randomBytes(500);
  const upper = await put(7, bytes, {}, id.toUpperCase());
  expect(upper.status).toBe(201);
  expect(((await upper.json()) as { path: string }).path).toBe(`/v1/runs/${id}/checkpoints/7`);
  expect((await put(7, bytes, {}, id)).status).toBe(200);
  const events = await sqlQuery<{ n: number }>(
    server.databaseUrl,
    `SELECT count(*)::int AS n FROM events WHERE run_id = $1 AND type = 'checkpoint.saved' AND iteration = 7`,
    [id],
  );
  expect(events).toEqual([{ n: 1 }]);
});
