import type { DiagnosticKind } from '@creditlab/estimators';

/** Per-step diagnostics as stored: float32 (NaN for null), base64 in JSON. */
export type StoredDiagnostics = Record<string, { kind: DiagnosticKind; values: string }>;

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
): StoredDiagnostics {
  return Object.fromEntries(
    Object.entries(diagnostics).map(([name, values]) => [
      name,
      { kind: kinds.get(name) ?? 'number', values: packFloat32Array(values).toString('base64') },
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

export function decodeDiagnostics(
  stored: StoredDiagnostics,
): Record<string, { kind: DiagnosticKind; values: Float32Array }> {
  return Object.fromEntries(
    Object.entries(stored).map(([name, d]) => [
      name,
      { kind: d.kind, values: unpackFloat32Array(Buffer.from(d.values, 'base64')) },
    ]),
  );
}
