import type pg from 'pg';

/** The most parameters one statement takes (the protocol counts them in 16 bits). */
export const MAX_PARAMETERS = 65_535;

/**
 * Statements sent as few, so that they cost one round trip to PostgreSQL instead of one each (on
 * the ingest path a request's small statements waited about 0.3 ms each for their answer on this
 * machine, more over a network). Consecutive parts are joined into one statement while its
 * parameters fit (MAX_PARAMETERS): every part but the last becomes a WITH query of the last.
 * PostgreSQL runs a data-modifying WITH query to completion whether or not the statement reads it,
 * and checks foreign keys after the whole statement, so one part may insert rows that another
 * part's rows reference. All parts of a statement see one snapshot: no part may read what another
 * writes, and no row may be changed by two parts. Each part keeps its own parameters (`$1`…,
 * renumbered here: a part must hold no other `$`, in a literal or a comment), so parts are written as
 * if alone; none may have WITH queries of its own, and only the last may be a SELECT (a WITH query
 * that only reads runs only if the statement reads it).
 */
export function asFewStatements(
  parts: readonly pg.QueryConfig[],
  maxParameters = MAX_PARAMETERS,
): pg.QueryConfig[] {
  const statements: pg.QueryConfig[] = [];
  let group: pg.QueryConfig[] = [];
  let parameters = 0;
  for (const part of parts) {
    const n = part.values?.length ?? 0;
    if (group.length > 0 && parameters + n > maxParameters) {
      statements.push(oneStatement(group));
      group = [];
      parameters = 0;
    }
    group.push(part);
    parameters += n;
  }
  if (group.length > 0) statements.push(oneStatement(group));
  return statements;
}

function oneStatement(parts: readonly pg.QueryConfig[]): pg.QueryConfig {
  if (parts.length === 1) return parts[0] as pg.QueryConfig;
  const values: unknown[] = [];
  const texts = parts.map((part, k) => {
    if (/^\s*WITH\b/i.test(part.text))
      throw new Error(`a part with WITH queries of its own: ${part.text.slice(0, 60)}`);
    // A WITH query that only reads runs only if the statement reads it: a SELECT part must be last.
    if (k < parts.length - 1 && !/^\s*(INSERT|UPDATE|DELETE)\b/i.test(part.text))
      throw new Error(`a part that writes nothing before the last: ${part.text.slice(0, 60)}`);
    const offset = values.length;
    values.push(...(part.values ?? []));
    return offset === 0
      ? part.text
      : part.text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`);
  });
  const main = texts.pop() as string;
  return { text: `WITH ${texts.map((t, i) => `w${i} AS (${t})`).join(',\n')}\n${main}`, values };
}
