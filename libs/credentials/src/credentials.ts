import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';

/** What the embedded server writes on its first start, and what the trainer and CLIs read when given no key. */
export interface Credentials {
  /** The server the key is for; a key is never sent to another server. */
  url: string;
  apiKey: string;
  /** The key's project; null for an admin key over every project. */
  project: string | null;
  role: 'read' | 'write' | 'admin';
  createdAt: string;
}

export const DEFAULT_URL = 'http://127.0.0.1:4000';

/** `CREDITLAB_CREDENTIALS`, else `~/.creditlab/credentials.json`. */
export function credentialsPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.CREDITLAB_CREDENTIALS || path.join(homedir(), '.creditlab', 'credentials.json');
}

export function readCredentials(file = credentialsPath()): Credentials | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  const parsed = JSON.parse(text) as Partial<Credentials>;
  if (typeof parsed.url !== 'string' || typeof parsed.apiKey !== 'string')
    throw new Error(`${file}: expected {"url": ..., "apiKey": ...}`);
  return parsed as Credentials;
}

/**
 * Writes the file readable by its owner only (0600, folder 0700). The content goes to a temporary
 * file created with those permissions and is renamed over the old one, so a reader never sees a
 * half-written key and the key is never briefly world-readable.
 */
export function writeCredentials(credentials: Credentials, file = credentialsPath()): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, JSON.stringify(credentials, null, 2) + '\n', { mode: 0o600 });
  chmodSync(temporary, 0o600); // the mode above is filtered by the umask; this is not
  renameSync(temporary, file);
}

export interface Connection {
  url: string;
  apiKey?: string;
}

/**
 * The server and key a tool uses: explicit values, else CREDITLAB_URL / CREDITLAB_API_KEY, else the
 * credentials file — whose key is used only for the server it was written for.
 */
export function resolveConnection(
  given: { url?: string; apiKey?: string } = {},
  env: NodeJS.ProcessEnv = process.env,
): Connection {
  const saved = readCredentials(credentialsPath(env));
  const url = given.url ?? env.CREDITLAB_URL ?? saved?.url ?? DEFAULT_URL;
  const apiKey =
    given.apiKey ??
    env.CREDITLAB_API_KEY ??
    (saved && sameServer(saved.url, url) ? saved.apiKey : undefined);
  return { url, apiKey };
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

function sameServer(a: string, b: string): boolean {
  const x = new URL(a);
  const y = new URL(b);
  const host = (h: string) => (LOOPBACK.has(h) ? 'loopback' : h);
  return x.protocol === y.protocol && x.port === y.port && host(x.hostname) === host(y.hostname);
}
