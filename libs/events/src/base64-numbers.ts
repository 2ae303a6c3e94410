/**
 * Numbers as the columnar form and the compact vector encoding carry them: base64 of little-endian
 * float64 (exact) or float32. Float64Array and Float32Array are in the machine's byte order; every
 * platform Node runs on is little-endian, like the wire.
 */

/** Numbers as base64 of little-endian float64 (exact); NaN for a missing one. */
export function float64Base64(values: ArrayLike<number | undefined>): string {
  const f64 = Float64Array.from(values, (x) => (x === undefined ? NaN : x));
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

/** Little-endian float32 values from their bytes, copied out into an aligned array. */
export function float32Values(bytes: Uint8Array): Float32Array {
  const values = new Float32Array(bytes.length / 4);
  new Uint8Array(values.buffer).set(bytes);
  return values;
}
