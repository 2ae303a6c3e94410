/** The most iterations one address may list (a range expands to its iterations). */
const MAX_LISTED = 10_000;

/**
 * Iterations as a user writes them (the compare page's `it`, the recompute form): undefined (none: the default), null ("all"), or iterations given as numbers
 * and ranges (`0,2,5-9`); `error` names what is not one of those. A bad entry was dropped without a word,
 * so "abc" or "1-3" compared the last iteration.
 */
export function parseIterations(text: string | null): {
  iterations: number[] | null | undefined;
  error?: string;
} {
  if (text === null || text.trim() === '') return { iterations: undefined };
  if (text.trim() === 'all') return { iterations: null };
  const out: number[] = [];
  for (const part of text.split(',').map((s) => s.trim())) {
    const m = /^(\d+)(?:\s*-\s*(\d+))?$/.exec(part);
    const from = m ? Number(m[1]) : NaN;
    const to = m?.[2] === undefined ? from : Number(m[2]);
    if (!m || to < from || out.length + (to - from + 1) > MAX_LISTED)
      return {
        iterations: undefined,
        error: `iterations: "${part}" is not an iteration or a range of them (e.g. 0,2,5-9, or all)`,
      };
    for (let i = from; i <= to; i++) out.push(i);
  }
  return { iterations: out };
}
