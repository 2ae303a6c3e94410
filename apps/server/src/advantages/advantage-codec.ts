import type { DiagnosticKind } from '@creditlab/estimators';

/** Per-step diagnostics as stored: names, kinds, and one packed float32 block per name (NaN for null). */
export interface StoredDiagnostics {
  names: string[];
  kinds: DiagnosticKind[];
  values: Buffer;
}

export type Diagnostics = Record<string, { kind: DiagnosticKind; values: Float32Array }>;

export function packFloat32Array(xs: ArrayLike<number>): Buffer {
  const f = Float32Array.from(xs as ArrayLike<number>);
  return Buffer.from(f.buffer, f.byteOffset, f.byteLength);
}

/** Copies into an aligned Float32Array (pg's Buffers may sit at any byte offset). */
export function unpackFloat32Array(buf: Buffer): Float32Array {
  return new Float32Array(new Uint8Array(buf).buffer);
}

export function encodeDiagnostics(
  diagnostics: Record<string, ArrayLike<number>>,
  kinds: Map<string, DiagnosticKind>,
  stepCount: number,
): StoredDiagnostics {
  const names = Object.keys(diagnostics);
  const packed = new Float32Array(names.length * stepCount);
  names.forEach((name, i) => packed.set(diagnostics[name] as ArrayLike<number>, i * stepCount));
  return {
    names,
    kinds: names.map((n) => kinds.get(n) ?? 'number'),
    values: Buffer.from(packed.buffer, packed.byteOffset, packed.byteLength),
  };
}

export function decodeDiagnostics(stored: StoredDiagnostics, stepCount: number): Diagnostics {
  const all = unpackFloat32Array(stored.values);
  return Object.fromEntries(
    stored.names.map((name, i) => [
      name,
      {
        kind: stored.kinds[i] as DiagnosticKind,
        values: all.subarray(i * stepCount, (i + 1) * stepCount),
      },
    ]),
  );
}

/** One value of a stored diagnostic, as JSON: null for NaN, booleans for boolean diagnostics. */
export function diagnosticValue(
  d: { kind: DiagnosticKind; values: Float32Array },
  k: number,
): number | boolean | null {
  const x = d.values[k] as number;
  if (Number.isNaN(x)) return null;
  return d.kind === 'boolean' ? x !== 0 : x;
}
