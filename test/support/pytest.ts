import path from 'node:path';
import { spawnTracked } from './process-registry';
import { ADMIN_KEY, type ServerProcess } from './test-server';

const ROOT = path.resolve(__dirname, '../..');

/**
 * One module of the Python client's pytest suite (clients/python/tests) against `server`, with the
 * package on PYTHONPATH (no install needed); `env` adds to what the suite reads (its database for a
 * second server of its own, the node binary).
 */
export function pytest(
  module: string,
  server: ServerProcess & { databaseUrl: string },
  env: Record<string, string> = {},
): Promise<{ code: number | null; output: string }> {
  const child = spawnTracked(
    'python3',
    ['-m', 'pytest', `clients/python/tests/${module}`, '-q', '-p', 'no:cacheprovider'],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        PYTHONPATH: path.join(ROOT, 'clients/python/src'),
        PYTHONDONTWRITEBYTECODE: '1',
        CREDITLAB_URL: server.url,
        CREDITLAB_API_KEY: ADMIN_KEY,
        CREDITLAB_PYTEST_DATABASE_URL: server.databaseUrl,
        CREDITLAB_PYTEST_NODE: process.execPath,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })));
}
