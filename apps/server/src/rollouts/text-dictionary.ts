import { hash } from 'node:crypto';
import type pg from 'pg';
import type { Int8Words } from './binary-copy-rows';

/**
 * A text's id: the first 8 bytes of its SHA-256 (of its UTF-8) as a signed bigint, derived from the
 * text alone. The one-shot `hash` makes no Hash object per text (ingest hashes every new text).
 */
export function textId(text: string): bigint {
  return sha256(text).readBigInt64BE(0);
}

const sha256 = (text: string) => hash('sha256', text, 'buffer');

/** A text's id in the forms ingest writes: its int8's two words (COPY rows) and decimal text. */
export interface TextIdForms extends Int8Words {
  decimal: string;
}

function textIdForms(text: string): TextIdForms {
  const digest = sha256(text);
  return {
    high: digest.readInt32BE(0),
    low: digest.readUInt32BE(4),
    decimal: String(digest.readBigInt64BE(0)),
  };
}

/**
 * Text ids already derived, for every request of the process, by run: a run's states and actions
 * recur across its iterations, so most of a request's texts were in the last one. Kept per run so
 * that no request finds another run's texts (how long an id took would tell whether some other
 * run, perhaps another project's, had sent that text). Two generations bound it: once the current
 * one holds half of CACHE_BYTES (two bytes per character of text, the most V8 takes, plus
 * ENTRY_BYTES for the entry) it becomes the previous one and the one before is dropped, so texts in
 * use stay and the cache holds at most about CACHE_BYTES (measured: 31 MiB of heap for millions of
 * 10-character texts, 21 MiB for 200-character ones). An id is a pure function of its text, so a
 * cached one is never stale.
 */
const CACHE_BYTES = 32 * 1024 * 1024;
const ENTRY_BYTES = 128;
type Generation = Map<string, Map<string, TextIdForms>>; // run id → text → id
let current: Generation = new Map();
let previous: Generation = new Map();
let currentBytes = 0;

function cachedTextId(runId: string, text: string): TextIdForms {
  let texts = current.get(runId);
  let id = texts?.get(text);
  if (id) return id;
  id = previous.get(runId)?.get(text) ?? textIdForms(text);
  if (!texts) current.set(runId, (texts = new Map()));
  texts.set(text, id);
  currentBytes += 2 * text.length + ENTRY_BYTES;
  if (currentBytes > CACHE_BYTES / 2) {
    previous = current;
    current = new Map();
    currentBytes = 0;
  }
  return id;
}

/** The distinct ids (decimal) of `texts` in `runId`, from the cache where it has them. */
export function textIdsOf(runId: string, texts: Iterable<string>): string[] {
  const ids = new Set<string>();
  for (const text of texts) ids.add(cachedTextId(runId, text).decimal);
  return [...ids];
}

/** What the cache holds now, as it counts it (bytes of both generations): for tests and diagnostics. */
export function textIdCacheSize(): { entries: number; bytes: number } {
  let entries = 0;
  let bytes = 0;
  for (const generation of [previous, current])
    for (const texts of generation.values())
      for (const text of texts.keys()) {
        entries++;
        bytes += 2 * text.length + ENTRY_BYTES;
      }
  return { entries, bytes };
}

/**
 * The statement `save` writes with (exported for bench:ingest-database, which measures it alone):
 * the run id, the texts' ids (as decimal text) and the texts.
 */
export const INSERT_TEXTS_SQL = `INSERT INTO texts (run_id, id, text) SELECT $1, * FROM unnest($2::bigint[], $3::text[])
  ON CONFLICT DO NOTHING`;

/** Which of the given text ids (decimal text) the run has stored. */
export const STORED_TEXT_IDS_SQL = `SELECT id::text AS id FROM texts WHERE run_id = $1 AND id = ANY($2::bigint[])`;

/**
 * The run's dictionary of state and action texts: each distinct text is stored once per run and
 * steps reference it by id. Ids come from the texts themselves, so resolving needs no round trip
 * and a rebuild gives every text the same id; writing the texts new to this session costs a
 * lookup of their ids per chunk, and a statement for those the run has not stored.
 */
export class TextDictionary {
  private readonly ids = new Map<string, TextIdForms>();
  private pending: [string, string][] = [];
  /**
   * Texts' ids (decimal) asked about ahead, with the chunk's duplicate check (`toLookUp`): whether
   * the run had stored each before this session. A text is asked about once per session.
   */
  private readonly storedBefore = new Map<string, boolean>();

  constructor(
    private readonly client: pg.PoolClient,
    private readonly runId: string,
  ) {}

  /** The id of `text`, queued to be stored if this session has not stored it yet. */
  id(text: string): TextIdForms {
    let id = this.ids.get(text);
    if (id === undefined) {
      id = cachedTextId(this.runId, text);
      this.ids.set(text, id);
      this.pending.push([id.decimal, text]);
    }
    return id;
  }

  /**
   * The ids (decimal) of those of `texts` this session has neither met nor asked about, to be looked
   * up ahead with the chunk's duplicate check (one round trip for both; `storedAmong` takes the
   * answer). A text this session met needs no asking: it is queued or written by the session
   * already, and is not queued again.
   */
  toLookUp(texts: Iterable<string>): string[] {
    const ids: string[] = [];
    for (const text of texts) {
      if (this.ids.has(text)) continue;
      const id = cachedTextId(this.runId, text).decimal;
      if (this.storedBefore.has(id)) continue;
      this.storedBefore.set(id, false);
      ids.push(id);
    }
    return ids;
  }

  /** The answer to `toLookUp`'s ids: these of them the run has stored. */
  storedAmong(ids: Iterable<string>): void {
    for (const id of ids) this.storedBefore.set(id, true);
  }

  /**
   * Ids asked about before the session began (first-event-lookup.ts, in its transaction), and
   * which of them the run has stored: not asked about again.
   */
  askedAhead(asked: Iterable<string>, stored: Iterable<string>): void {
    for (const id of asked) if (!this.storedBefore.has(id)) this.storedBefore.set(id, false);
    this.storedAmong(stored);
  }

  /**
   * Takes the texts queued since the last call. When called, the returned function looks up which
   * of them the run has stored and gives the statement that stores the others (none if none), to be
   * sent with the chunk's other statements.
   */
  takeStore(): () => Promise<pg.QueryConfig[]> {
    if (this.pending.length === 0) return () => Promise.resolve([]);
    const ids = this.pending.map(([id]) => id);
    const texts = this.pending.map(([, text]) => text);
    this.pending = [];
    return () => this.newTexts(ids, texts);
  }

  private async newTexts(ids: string[], texts: string[]): Promise<pg.QueryConfig[]> {
    // Most texts of a request are usually stored already (states and actions recur across
    // iterations): ask which by id (unless asked ahead), then send only the new ones. Sending every
    // text for ON CONFLICT to discard cost 2.2 ms per 1,500-step request in bench:ingest, 99.5 % of
    // the texts known.
    const ask = ids.filter((id) => !this.storedBefore.has(id));
    const known = new Set<string>();
    if (ask.length > 0) {
      const stored = await this.client.query<{ id: string }>(STORED_TEXT_IDS_SQL, [
        this.runId,
        ask,
      ]);
      for (const r of stored.rows) known.add(r.id);
    }
    const fresh = ids.flatMap((id, i) => ((this.storedBefore.get(id) ?? known.has(id)) ? [] : [i]));
    if (fresh.length === 0) return [];
    return [
      {
        text: INSERT_TEXTS_SQL,
        values: [this.runId, fresh.map((i) => ids[i]), fresh.map((i) => texts[i])],
      },
    ];
  }
}
