/**
 * What PostgreSQL cannot store although JSON can say it: a NUL character (text and jsonb refuse
 * U+0000), a lone UTF-16 surrogate (not valid Unicode: refused, or silently replaced by U+FFFD
 * on the way in), deeply nested values (jsonb and the server's own recursion have limits), and a
 * key named `__proto__` (JSON.parse keeps it, but copying the object into another, as validation
 * does, sets a prototype instead of a field: the value would vanish unchecked). Checked at the
 * edge, so that such input is the caller's 400 naming the field, never a 500 or a silent loss.
 */
export const MAX_JSON_DEPTH = 64;

const PROTO_KEY = 'must not be "__proto__" (a JavaScript object cannot hold it as a field)';

export interface StorableIssue {
  path: PropertyKey[];
  message: string;
}

/** Why `s` cannot be stored as text, or undefined if it can. */
export function textProblem(s: string): string | undefined {
  if (s.includes('\u0000')) return 'must not contain the NUL character (\\u0000)';
  if (!s.isWellFormed()) return 'must be valid Unicode (it contains a lone UTF-16 surrogate)';
  return undefined;
}

/**
 * The first place in `value` that cannot be stored: a string or object key with NUL or a lone
 * surrogate, a key `__proto__`, or nesting deeper than `maxDepth`. Arrays of numbers (embeddings: the bulk of a
 * step) are skipped after one cheap pass. The path is a stack, copied only for an issue: this runs
 * on every ingested event.
 */
export function findUnstorable(
  value: unknown,
  maxDepth = MAX_JSON_DEPTH,
): StorableIssue | undefined {
  const path: PropertyKey[] = [];
  const visit = (v: unknown): StorableIssue | undefined => {
    if (typeof v === 'string') {
      const message = textProblem(v);
      return message ? { path: [...path], message } : undefined;
    }
    if (typeof v !== 'object' || v === null) return undefined;
    if (path.length >= maxDepth)
      return { path: [...path], message: `nested deeper than ${maxDepth} levels` };
    if (Array.isArray(v)) {
      if (typeof v[0] === 'number' && v.every((x) => typeof x === 'number')) return undefined;
      for (let i = 0; i < v.length; i++) {
        path.push(i);
        const issue = visit(v[i]);
        path.pop();
        if (issue) return issue;
      }
      return undefined;
    }
    for (const key in v) {
      path.push(key);
      const message = key === '__proto__' ? PROTO_KEY : textProblem(key);
      const issue = message
        ? { path: [...path], message: `key ${message}` }
        : visit((v as Record<string, unknown>)[key]);
      path.pop();
      if (issue) return issue;
    }
    return undefined;
  };
  return visit(value);
}
