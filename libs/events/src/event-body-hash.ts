import { createHash } from 'node:crypto';

/**
 * JSON with object keys sorted, so that the same content always reads the same whatever order
 * its keys came in. Typed arrays are written as number arrays; non-finite numbers and undefined
 * follow JSON.stringify (null, omitted).
 */
export function canonicalJson(value: unknown): string {
  // Most values come with their keys in order already (clients that write canonical JSON, a single
  // key, ours): then it is JSON.stringify's text, made natively at a fraction of the cost.
  return plainInOrder(value) ? JSON.stringify(value) : sortedJson(value);
}

/**
 * How many levels below a value not in order still ask, part by part, whether a part is in order
 * (and then take JSON.stringify's text for it): an event's data is often out of order at its top
 * only (a client's `{iteration, groups, columns}`) with every part below in order, as a columnar
 * event's hundred trajectories and its texts are. Asking at every level would walk a deep value once
 * per level above it; two levels walk it at most three times.
 */
const LEVELS_THAT_ASK = 2;

function sortedJson(value: unknown, asking = LEVELS_THAT_ASK): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (ArrayBuffer.isView(value)) return JSON.stringify(Array.from(value as Float32Array));
  const part = (x: unknown) =>
    asking > 0 && plainInOrder(x) ? JSON.stringify(x) : sortedJson(x, asking - 1);
  if (Array.isArray(value)) {
    if (value.every((x) => typeof x === 'number')) return JSON.stringify(value);
    return `[${value.map((x) => (x === undefined ? 'null' : part(x))).join(',')}]`;
  }
  const record = value as Record<string, unknown>;
  const parts: string[] = [];
  for (const key of Object.keys(record).sort()) {
    const item = record[key];
    if (item === undefined || typeof item === 'function') continue;
    parts.push(`${JSON.stringify(key)}:${part(item)}`);
  }
  return `{${parts.join(',')}}`;
}

/**
 * Whether JSON.stringify writes `value` as sortedJson would: it holds only what JSON.parse makes
 * (null, booleans, numbers, strings, arrays, plain objects: no typed array, Date, undefined or
 * function, which the two write differently) and every object's keys are in sorted order already
 * (JSON.stringify writes them in Object.keys order, which puts integer-like keys first: "2" before
 * "10", where sorting puts "10" first, so such an object is not in order).
 */
function plainInOrder(value: unknown): boolean {
  if (value === null) return true;
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
      return true;
    case 'object':
      break;
    default:
      return false;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!plainInOrder(value[i])) return false;
    return true;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  const record = value as Record<string, unknown>;
  let previous: string | undefined;
  for (const key of Object.keys(record)) {
    if (previous !== undefined && !(previous < key)) return false;
    if (!plainInOrder(record[key])) return false;
    previous = key;
  }
  return true;
}

/**
 * SHA-256 of an event's type and canonical data, as the server holds it (vectors at float32
 * precision, as stored): what tells a retried event (same id, same body: a duplicate) from a
 * reused id (same id, another body: a conflict).
 */
export function eventBodyHash(type: string, data: unknown): Buffer {
  return createHash('sha256').update(type).update('\n').update(canonicalJson(data)).digest();
}
