/**
 * Numbers as the columnar form and the compact vector encoding carry them: base64 of little-endian
 * float64 (exact) or float32. Float64Array and Float32Array are in the machine's byte order; every
 * platform Node runs on is little-endian, like the wire.
 */

/** Standard base64: its alphabet, then at most two '=' (the padding may be left off). */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * The bytes of `text` if it is standard base64, else undefined. Node's decoder alone would take
 * anything (it skips what it cannot read, and reads the URL-safe alphabet too), so the text is
 * checked (isStandardBase64).
 */
export function decodeBase64(text: string): Buffer | undefined {
  const bytes = Buffer.from(text, 'base64');
  return isStandardBase64(text, bytes.length) ? bytes : undefined;
}

/**
 * Whether `text`, which Node's decoder read as `decoded` bytes, is standard base64 (the pattern
 * BASE64). Text as every encoder writes it (whole groups of 4 characters, at most two '=' at the
 * end) is told by its length: each ASCII character the decoder skipped (outside the alphabet, a '='
 * before the end) would have made fewer bytes than such text has, so the count is exact when the
 * text is ASCII (the decoder reads a character above 0xFF by its low byte: "AAAŁ" as "AAAA") and
 * the URL-safe '-' and '_', which it reads, are absent. Three native scans of the text instead of
 * encoding the bytes back and comparing strings (about 1 µs per 1 KB vector here, a fifth of
 * preparing a columnar event with 256-d embeddings), and far less than the pattern (11 µs), which
 * is kept for text written otherwise (no padding, say).
 */
function isStandardBase64(text: string, decoded: number): boolean {
  const length = text.length;
  if (length % 4 !== 0) return BASE64.test(text);
  const padding =
    length === 0 ? 0 : text[length - 1] !== '=' ? 0 : text[length - 2] === '=' ? 2 : 1;
  return (
    decoded === (length / 4) * 3 - padding &&
    Buffer.byteLength(text, 'utf8') === length && // ASCII only
    !text.includes('-') &&
    !text.includes('_')
  );
}

/**
 * Decodes many base64 texts into one buffer, each at an offset that is a multiple of 4 while every
 * text before it decoded to a multiple of 4 bytes (as float32 vectors do), so each can be viewed as a
 * Float32Array without a copy. One allocation for a whole column: a fresh ArrayBuffer per vector
 * (what decoding them one by one and copying into aligned arrays costs) made the allocator and the
 * garbage collector's sweeping of array buffers most of a 256-d embedding's decoding: about 6 µs of
 * the process's CPU per vector against 1.7 µs this way, decoding alone (docs/benchmarks.md has the
 * effect on ingest). The texts are checked as `decodeBase64` checks them.
 */
export class Base64Arena {
  private readonly arena: Buffer;
  private used = 0;

  /** Room for every text of `texts` (null or non-string entries take none). */
  constructor(texts: readonly unknown[]) {
    let capacity = 0;
    for (const text of texts)
      if (typeof text === 'string') capacity += Math.ceil(text.length / 4) * 3;
    this.arena = Buffer.from(new ArrayBuffer(capacity));
  }

  /** The bytes of `text` (one of the constructor's texts) if it is standard base64, else undefined. */
  decode(text: string): Buffer | undefined {
    const from = this.used;
    const length = this.arena.write(text, from, 'base64');
    if (!isStandardBase64(text, length)) return undefined;
    this.used += length;
    return this.arena.subarray(from, from + length);
  }
}

/** Numbers as base64 of little-endian float64 (exact); NaN for a missing one. */
export function float64Base64(values: ArrayLike<number | undefined>): string {
  return float64Base64Of(values.length, (i) => values[i]);
}

/**
 * The numbers `value(0)` to `value(n − 1)` as float64Base64 writes them, read straight into the
 * typed array (no list of them first): a loop, not Float64Array.from with a mapping callback, which
 * V8 runs through the iterator protocol, several times slower (it was a fifth of making a log body
 * from step objects).
 */
export function float64Base64Of(n: number, value: (i: number) => number | undefined): string {
  const f64 = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const x = value(i);
    f64[i] = x === undefined ? NaN : x;
  }
  return Buffer.from(f64.buffer, f64.byteOffset, f64.byteLength).toString('base64');
}

/** Vectors travel as base64 of little-endian float32: 3 to 5 times fewer bytes than JSON numbers. */
export function float32Base64(values: ArrayLike<number>): string {
  const f32 = values instanceof Float32Array ? values : Float32Array.from(values);
  return Buffer.from(f32.buffer, f32.byteOffset, f32.byteLength).toString('base64');
}

/** Little-endian float64 values from their bytes, copied out (a Buffer's offset in its pool need not be 8-byte aligned). */
export function float64Values(bytes: Uint8Array): Float64Array {
  const values = new Float64Array(bytes.length / 8);
  new Uint8Array(values.buffer).set(bytes);
  return values;
}

/**
 * Float32 values over `bytes` without a copy when they are 4-byte aligned in their buffer (as
 * Base64Arena places them), else copied out into an aligned array.
 */
export function float32View(bytes: Uint8Array): Float32Array {
  return bytes.byteOffset % 4 === 0
    ? new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4)
    : float32Values(bytes);
}

/** Little-endian float32 values from their bytes, copied out into an aligned array. */
export function float32Values(bytes: Uint8Array): Float32Array {
  const values = new Float32Array(bytes.length / 4);
  new Uint8Array(values.buffer).set(bytes);
  return values;
}

/**
 * The index of the first value that is not a finite number, or −1. A plain loop: a typed array's
 * findIndex calls its callback through a builtin that V8 does not inline, 5 to 10 times slower
 * (3–7 µs against 0.5 µs for a 256-d embedding here, on every ingested step that has one).
 */
export function firstNonFinite(values: Float32Array | Float64Array): number {
  for (let i = 0; i < values.length; i++) if (!Number.isFinite(values[i])) return i;
  return -1;
}
