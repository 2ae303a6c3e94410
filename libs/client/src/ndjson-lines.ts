/** NDJSON as bytes: the lines the client sends, split and joined without decoding them. */

const LF = 0x0a;
const CR = 0x0d;

/** NDJSON lines (UTF-8, without their newlines) as one request body, each line ending in a newline. */
export function ndjsonBody(lines: readonly Uint8Array[]): Uint8Array {
  let size = 0;
  for (const line of lines) size += line.length + 1;
  const body = Buffer.allocUnsafe(size);
  let at = 0;
  for (const line of lines) {
    body.set(line, at);
    body[at + line.length] = LF;
    at += line.length + 1;
  }
  return body;
}

/** The non-blank lines of NDJSON bytes, as views of them (no copy), split as the server splits them. */
export function ndjsonLines(bytes: Uint8Array): Uint8Array[] {
  const lines: Uint8Array[] = [];
  let start = startsWithBom(bytes) ? 3 : 0;
  // The next \n and \r found natively (a JavaScript loop over every byte is several times slower).
  let lf = bytes.indexOf(LF, start);
  let cr = bytes.indexOf(CR, start);
  while (start < bytes.length) {
    if (lf !== -1 && lf < start) lf = bytes.indexOf(LF, start);
    if (cr !== -1 && cr < start) cr = bytes.indexOf(CR, start);
    const end = Math.min(lf === -1 ? bytes.length : lf, cr === -1 ? bytes.length : cr);
    if (!blank(bytes.subarray(start, end))) lines.push(bytes.subarray(start, end));
    start = end === cr && bytes[end + 1] === LF ? end + 2 : end + 1;
  }
  return lines;
}

const startsWithBom = (b: Uint8Array) => b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf;

/** Whether a line is blank as the server tells it (whitespace only, by JavaScript's `trim`). */
function blank(line: Uint8Array): boolean {
  for (const b of line) {
    if (b === 0x20 || (b >= 0x09 && b <= 0x0d)) continue;
    if (b < 0x80) return false; // an event's line: the first byte is `{`
    return Buffer.from(line).toString().trim() === ''; // other Unicode whitespace
  }
  return true;
}

/** An NDJSON line's JSON, if it parses (the lines the client sends do; text given as NDJSON may not). */
export function parsedLine(line: Uint8Array | undefined): Record<string, unknown> | undefined {
  if (line === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(
      Buffer.from(line.buffer, line.byteOffset, line.length).toString(),
    );
    return value !== null && typeof value === 'object'
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
