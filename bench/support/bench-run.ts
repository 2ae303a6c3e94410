import { ADMIN_KEY } from '../../test/support/test-server';

/** A new run on the benchmark's server, through the HTTP API; its id. */
export async function createRun(url: string, name: string): Promise<string> {
  const res = await fetch(`${url}/v1/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_KEY}` },
    body: JSON.stringify({ name, env: 'synthetic', method: 'gigpo' }),
  });
  if (!res.ok) throw new Error(`creating a run: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}
