import { createHash } from 'node:crypto';
import type pg from 'pg';

/**
 * Parameterised statements the process sends again and again, prepared once per connection (a named
 * statement: PostgreSQL parses and plans it the first time, then only binds and runs it). Ingest
 * sends the same few large statements in every request (the duplicate check, the texts' lookup, the
 * joined statements of one-statement.ts), and parsing and planning them anew was about a third of
 * the database's CPU for a request of one iteration: bench:ingest-request, statements named or not
 * in turn, 2.2–2.5 against 1.4–1.5 ms per one-step request (docs/benchmarks.md).
 *
 * Only a text seen before is named (one seen once, such as a packed upsert of an unusual number of
 * iterations, is not worth a statement kept on the connection), and at most `perConnection` texts per
 * connection, so a connection holds a bounded set of prepared statements however many texts the
 * process makes. Statements given as a Submittable (a COPY) or with a name of their own, and the
 * simple protocol's texts without parameters, go as they are.
 */
export function prepareRepeatedStatements(pool: pg.Pool, { perConnection = 64 } = {}): void {
  pool.on('connect', (client) => {
    const named = new Set<string>();
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = (...args: unknown[]) => {
      const statement = asStatement(args);
      if (statement) {
        const name = repeatedName(statement.text);
        if (name && (named.has(name) || named.size < perConnection)) {
          named.add(name);
          return query({ ...statement, name });
        }
      }
      return query(...args);
    };
  });
}

/** The call's statement if it is a text with parameters and no name (and no callback), else undefined. */
function asStatement(args: unknown[]): { text: string; values: unknown[] } | undefined {
  const [first, second, third] = args;
  if (typeof first === 'string')
    return Array.isArray(second) && third === undefined
      ? { text: first, values: second }
      : undefined;
  if (typeof first !== 'object' || first === null || second !== undefined) return undefined;
  const c = first as Partial<pg.QueryConfig> & { submit?: unknown };
  if (typeof c.text !== 'string' || !Array.isArray(c.values) || c.name || c.submit)
    return undefined;
  return c as { text: string; values: unknown[] };
}

/**
 * Texts seen once (value null) and the name of each seen more often. A new generation when it
 * holds SEEN_TEXTS, so it stays bounded while the texts in use are met again and named again.
 */
let seen = new Map<string, string | null>();
const SEEN_TEXTS = 1024;

function repeatedName(text: string): string | undefined {
  const known = seen.get(text);
  if (known) return known;
  if (known === null) {
    // 40 hex characters: within PostgreSQL's 63 for a name, and one per text however long.
    const name = `s${createHash('sha1').update(text).digest('hex')}`;
    seen.set(text, name);
    return name;
  }
  if (seen.size >= SEEN_TEXTS) seen = new Map();
  seen.set(text, null);
  return undefined;
}
