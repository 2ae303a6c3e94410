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
 * iterations, is not worth a statement kept on the connection), only texts of at most MAX_TEXT
 * characters and MAX_PARAMETERS parameters, and at most `perConnection` per connection, so a
 * connection holds a bounded set of prepared statements however many texts the process makes.
 * Calls with a callback (pg-pool's own `pool.query` passes one), a Submittable (a COPY), a name of
 * their own or no parameters (the simple protocol, which takes several statements in one text) go as
 * they are. A named statement that fails for a reason a fresh parse would not have (its values could
 * not be sent, and pg closed the statement; its cached plan no longer fits a table another process
 * changed; it is gone) is sent unnamed on that connection from then on.
 *
 * A connection that finds a name it never prepared already there (42P05) is not alone on its server
 * connection: a transaction-mode pooler lends each transaction whichever is free, and a named
 * statement prepared through one is missing, or already there, through the next. Every statement
 * of the pool then goes unnamed, and `onNotKept` says so once (the request that met it has failed;
 * the clients send it again).
 */
export function prepareRepeatedStatements(
  pool: pg.Pool,
  {
    perConnection = 64,
    onNotKept = () => undefined,
  }: { perConnection?: number; onNotKept?: (message: string) => void } = {},
): void {
  const pooled: PoolNaming = { kept: true, onNotKept };
  namingOfPool.set(pool, pooled);
  pool.on('connect', (client) => {
    const named = new Set<string>();
    const unusable = new Set<string>();
    namingOf.set(client, { unusable, pooled });
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = (...args: unknown[]) => {
      const statement = asStatement(args);
      const name = statement && repeatedName(statement.text);
      if (!statement || !name || unusable.has(name) || !pooled.kept) return query(...args);
      if (!named.has(name) && named.size >= perConnection) return query(...args);
      named.add(name);
      return (query({ ...statement, name }) as Promise<unknown>).catch((e: unknown) => {
        noteFailure(client, [name], e);
        throw e;
      });
    };
  });
}

/** Whether a pool's connections still name their statements, why not, and whom to tell when they stop. */
interface PoolNaming {
  kept: boolean;
  why?: string;
  onNotKept: (message: string) => void;
}

const namingOfPool = new WeakMap<pg.Pool, PoolNaming>();

/** Why `pool`'s statements stopped being prepared, if they did (`/readyz` warns of it). */
export function preparedStatementsOff(pool: pg.Pool): string | undefined {
  return namingOfPool.get(pool)?.why;
}

/** Each prepared connection's names no longer used (a statement failed in a way a fresh parse would not), and its pool's naming. */
const namingOf = new WeakMap<pg.ClientBase, { unusable: Set<string>; pooled: PoolNaming }>();

/** After a statement or pipeline that bound `names` failed with `error`: what it says of them, and of the pool. */
function noteFailure(client: pg.ClientBase, names: readonly string[], error: unknown): void {
  const naming = namingOf.get(client);
  if (!naming) return;
  if ((error as { code?: unknown } | null)?.code === DUPLICATE_PREPARED_STATEMENT) {
    if (!naming.pooled.kept) return;
    naming.pooled.kept = false;
    naming.pooled.why = `a statement this connection never prepared was already there (${(error as Error).message}): its server connection is shared, as behind a transaction-mode pooler. Statements go unnamed from now on; set CREDITLAB_PREPARED_STATEMENTS=off behind such a pooler (docs/scaling.md)`;
    naming.pooled.onNotKept(naming.pooled.why);
  } else if (brokeTheStatement(error)) for (const name of names) naming.unusable.add(name);
}

/** SQLSTATE duplicate_prepared_statement. */
const DUPLICATE_PREPARED_STATEMENT = '42P05';

/**
 * The name `text` is prepared under on this client's connection (parsed there already, and usable),
 * for a pipeline that binds it without a round trip of its own (pipeline.ts); undefined if it is not
 * (a connection of a pool without prepared statements, a text seen once, a connection that has not
 * sent it yet: sent as one query, it gets its name as any other).
 */
export function preparedName(client: pg.ClientBase, text: string): string | undefined {
  const name = seen.get(text);
  const naming = namingOf.get(client);
  if (!name || !naming || !naming.pooled.kept || naming.unusable.has(name)) return undefined;
  const connection = (client as { connection?: { parsedStatements?: Record<string, string> } })
    .connection;
  return connection?.parsedStatements?.[name] === text ? name : undefined;
}

/** After a pipeline that bound `names` failed with `error`: names it may have broken are not used again. */
export function notePipelineFailure(
  client: pg.ClientBase,
  names: readonly string[],
  error: unknown,
): void {
  noteFailure(client, names, error);
}

const MAX_TEXT = 16 * 1024;
const MAX_PARAMETERS = 512;

/**
 * The call's statement if it is a text with parameters, no name and no callback, not too large to
 * keep; else undefined.
 */
function asStatement(args: unknown[]): { text: string; values: unknown[] } | undefined {
  const [first, second, ...rest] = args;
  let statement: Partial<pg.QueryConfig> & { submit?: unknown };
  if (typeof first === 'string') statement = { text: first, values: second as unknown[] };
  else if (typeof first === 'object' && first !== null && second === undefined)
    statement = first as typeof statement;
  else return undefined;
  const { text, values } = statement;
  if (rest.some((a) => a !== undefined) || statement.name || statement.submit) return undefined;
  if (typeof text !== 'string' || !Array.isArray(values) || values.length === 0) return undefined;
  if (text.length > MAX_TEXT || values.length > MAX_PARAMETERS) return undefined;
  return { ...statement, text, values };
}

/**
 * Whether a named statement's failure leaves its name unusable on the connection: an error of the
 * client's own (no SQLSTATE, or a code that is not one, such as Node's `ERR_…`: a value pg could not
 * send, after which it closed the statement), a cached plan whose result no longer fits (0A000), a
 * statement that does not exist (26000).
 */
function brokeTheStatement(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true;
  return code === '0A000' || code === '26000';
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
