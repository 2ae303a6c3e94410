/**
 * JSON as UTF-8 bytes for a value holding long lists of base64 strings (or null), such as an
 * event body's vectors: the value is given with a mark (`base64ListMark(i)`) where the i-th list
 * goes, and the lists apart. Their strings need no escaping in JSON, so they are copied straight
 * into the buffer instead of passing through JSON.stringify and then UTF-8 encoding, which cost
 * 5–6 µs per ingested step with a 256-d embedding here against 1 µs this way.
 *
 * The bytes are those of `Buffer.from(JSON.stringify(value with each mark replaced by its list))`:
 * a body is a digest's input, and a retried event is told from a conflicting one by its digest.
 * The lists' strings must be base64 (checked by the caller: anything else would be written
 * unescaped), and no other string of the value may contain NUL (true of any valid event), since a
 * mark is NUL and the list's number.
 */
export function jsonWithBase64Lists(
  value: unknown,
  lists: readonly (readonly (string | null)[])[],
): Buffer {
  // Between pieces of the value's own JSON, the numbers of the lists that go there.
  const pieces = JSON.stringify(value).split(MARK_IN_JSON);
  if (pieces.length !== 2 * lists.length + 1 || !pieces.every(inOrder))
    throw new Error(
      `jsonWithBase64Lists: the value marks ${(pieces.length - 1) / 2} lists, not ${lists.length}`,
    );
  let size = 0;
  for (let p = 0; p < pieces.length; p += 2) size += Buffer.byteLength(pieces[p] as string, 'utf8');
  for (const items of lists) size += listBytes(items);
  const out = Buffer.allocUnsafe(size);
  let at = out.write(pieces[0] as string, 0, 'utf8');
  lists.forEach((items, l) => {
    at = writeList(out, at, items);
    at += out.write(pieces[2 * l + 2] as string, at, 'utf8');
  });
  if (at !== size) throw new Error(`jsonWithBase64Lists: wrote ${at} of ${size} bytes`);
  return out;
}

/**
 * JSON as UTF-8 bytes for an object whose named fields are base64 text, or lists of base64 texts
 * (or null): the bytes of `Buffer.from(JSON.stringify(fields))`, with those fields copied straight
 * into the buffer. For a columnar event's body, whose number columns are base64 text and vector
 * columns lists of it: JSON.stringify of the whole body, then a search for marks through all of it
 * and its UTF-8 encoding cost 0.8 µs per ingested step, about as much as the rest of checking the
 * event. The base64 fields must be checked by the caller (anything else would be written unescaped).
 */
export function jsonObjectWithBase64(
  fields: Record<string, unknown>,
  base64: ReadonlySet<string>,
): Buffer {
  // The JSON text between the base64 fields, and the fields themselves, in order.
  const texts: string[] = [];
  const values: (string | readonly (string | null)[])[] = [];
  let text = '{';
  let first = true;
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue; // as JSON.stringify leaves it out
    text += `${first ? '' : ','}${JSON.stringify(key)}:`;
    first = false;
    if (base64.has(key) && (typeof value === 'string' || Array.isArray(value))) {
      texts.push(text);
      values.push(value as string | (string | null)[]);
      text = '';
    } else text += JSON.stringify(value);
  }
  texts.push(`${text}}`);
  let size = 0;
  for (const t of texts) size += Buffer.byteLength(t, 'utf8');
  for (const v of values) size += typeof v === 'string' ? v.length + 2 : listBytes(v);
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  values.forEach((v, k) => {
    at += out.write(texts[k] as string, at, 'utf8');
    at = typeof v === 'string' ? writeQuoted(out, at, v) : writeList(out, at, v);
  });
  at += out.write(texts[texts.length - 1] as string, at, 'utf8');
  if (at !== size) throw new Error(`jsonObjectWithBase64: wrote ${at} of ${size} bytes`);
  return out;
}

/** The bytes of a list of base64 texts or nulls as JSON. */
function listBytes(items: readonly (string | null)[]): number {
  let size = 2 + Math.max(0, items.length - 1); // brackets, commas
  for (const item of items) size += item === null ? 4 : item.length + 2;
  return size;
}

function writeQuoted(out: Buffer, at: number, item: string): number {
  out[at++] = QUOTE;
  at += out.write(item, at, 'latin1');
  out[at++] = QUOTE;
  return at;
}

function writeList(out: Buffer, at: number, items: readonly (string | null)[]): number {
  out[at++] = OPEN_BRACKET;
  for (let i = 0; i < items.length; i++) {
    if (i > 0) out[at++] = COMMA;
    const item = items[i] as string | null;
    if (item === null) at += out.write('null', at, 'latin1');
    else at = writeQuoted(out, at, item);
  }
  out[at++] = CLOSE_BRACKET;
  return at;
}

/** What stands in the value for the `index`-th list. */
export function base64ListMark(index: number): string {
  return `\u0000${index}`;
}

/** A mark as JSON.stringify writes it, the list's number captured. */
const MARK_IN_JSON = /"\\u0000(\d+)"/;

/** Odd pieces are the marks' numbers, which must count 0, 1, 2, … */
function inOrder(piece: string, p: number): boolean {
  return p % 2 === 0 || piece === String((p - 1) / 2);
}

const COMMA = 0x2c;
const QUOTE = 0x22;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
