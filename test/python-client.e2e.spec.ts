import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { pytest } from './support/pytest';
import { startTestServer, type ServerProcess } from './support/test-server';

/**
 * The Python client (clients/python) against a real server: its pytest suite, one module per test so
 * that each stays within the tier's time limit and a failure names its area. The suite also starts a
 * second server process of its own on the same database (CREDITLAB_PYTEST_DATABASE_URL) to kill it in the
 * middle of a request.
 */
const ROOT = path.resolve(__dirname, '..');
let server: ServerProcess & { databaseUrl: string };

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

const MODULES: [string, string][] = [
  ['test_units.py', 'connection resolution, event splitting, compact floats, spool'],
  ['test_transport.py', 'a kept-alive connection the server closed is opened again'],
  ['test_conformance.py', 'every conformance fixture through the client'],
  ['test_compact.py', 'embeddings and token log-probs as base64 float32'],
  ['test_columnar.py', 'log_rollouts with the steps as columns'],
  ['test_verl_agent.py', 'the verl-agent adapter on shuffled, padded rows'],
  ['test_runs.py', 'runs, logging calls, with-block failure, resume, compare'],
  ['test_checkpoints.py', 'checkpoint upload, list and download, checked by SHA-256'],
  ['test_retries_and_spool.py', 'a server killed mid-request; spooling while it is gone'],
  ['test_offline.py', 'offline and durable runs, then creditlab sync, exactly once'],
  ['test_install.py', "offline install on Debian's Python; no numpy"],
];

test.each(MODULES)('pytest %s (%s)', async (module) => {
  const { code, output } = await pytest(module, server);
  if (code !== 0) throw new Error(`pytest ${module} exited ${code}:\n${output}`);
  expect(code).toBe(0);
});

test('every test module of the Python client is run above', async () => {
  // A module left out of the list would never run: nothing else collects them.
  const modules = (await readdir(path.join(ROOT, 'clients/python/tests'))).filter((f) =>
    /^test_.*\.py$/.test(f),
  );
  expect(modules.sort()).toEqual(MODULES.map(([module]) => module).sort());
});
