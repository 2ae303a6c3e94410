import { createHash } from 'node:crypto';

/**
 * JSON with object keys sorted, so that the same content always reads the same whatever order
 * its keys came in. Typed arrays are written as number arrays; non-finite numbers and undefined
 * follow JSON.stringify (null, omitted).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (ArrayBuffer.isView(value)) return JSON.stringify(Array.from(value as Float32Array));
  if (Array.isArray(value)) {
    if (value.every((x) => typeof x === 'number')) return JSON.stringify(value);
    return `[${value.map((x) => (x === undefined ? 'null' : canonicalJson(x))).join(',')}]`;
  }
  const record = value as Record<string, unknown>;
  const parts: string[] = [];
  for (const key of Object.keys(record).sort()) {
    const item = record[key];
    if (item === undefined || typeof item === 'function') continue;
    parts.push(`${JSON.stringify(key)}:${canonicalJson(item)}`);
  }
  return `{${parts.join(',')}}`;
}

/**
 * SHA-256 of an event's type and canonical data, as the server holds it (vectors at float32
 * precision, as stored): what tells a retried event (same id, same body: a duplicate) from a
 * reused id (same id, another body: a conflict).
 */
export function eventBodyHash(type: string, data: unknown): Buffer {
  return createHash('sha256').update(type).update('\n').update(canonicalJson(data)).digest();
}
