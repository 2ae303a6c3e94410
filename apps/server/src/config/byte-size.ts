import { z } from 'zod';

const UNITS: Record<string, number> = {
  B: 1,
  KiB: 2 ** 10,
  MiB: 2 ** 20,
  GiB: 2 ** 30,
  TiB: 2 ** 40,
};

/**
 * A size setting: a count of bytes (`268435456`) or one with a binary unit (`256MiB`, `1.5GiB`).
 * Decimal units (`GB`) are refused rather than guessed at: tools disagree on whether they mean
 * 10^9 or 2^30.
 */
export function parseByteSize(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$/.exec(text);
  if (!m) return undefined;
  const unit = m[2] === '' ? 1 : UNITS[m[2] as string];
  if (unit === undefined) return undefined;
  const bytes = Number(m[1]) * unit;
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

const EXPECTED = 'bytes, such as 268435456 or 256MiB (units B, KiB, MiB, GiB, TiB)';

/** The schema of a size setting: at least `min` bytes, at most `max`, `fallback` when unset. */
export const byteSize = (min: number, fallback: number, max = Number.MAX_SAFE_INTEGER) =>
  sizeOr([], min, max).default(fallback);

/** A size setting that may also be `off`. */
export const byteSizeOrOff = (min: number, fallback: number) =>
  sizeOr(['off'] as const, min, Number.MAX_SAFE_INTEGER).default(fallback);

function sizeOr<W extends string>(words: readonly W[], min: number, max: number) {
  const expected = words.length
    ? `${words.map((w) => `"${w}"`).join(', ')} or ${EXPECTED}`
    : EXPECTED;
  return z.string().transform((text, ctx): number | W => {
    if ((words as readonly string[]).includes(text)) return text as W;
    const bytes = parseByteSize(text);
    const issue = (message: string) => {
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    };
    if (bytes === undefined) return issue(`expected ${expected}, got ${JSON.stringify(text)}`);
    if (bytes < min) return issue(`at least ${min} bytes, got ${JSON.stringify(text)}`);
    if (bytes > max) return issue(`at most ${max} bytes, got ${JSON.stringify(text)}`);
    return bytes;
  });
}
