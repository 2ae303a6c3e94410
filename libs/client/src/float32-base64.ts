/** Vectors travel as base64 of little-endian float32: 3 to 5 times fewer bytes than JSON numbers. */
export function float32Base64(values: ArrayLike<number>): string {
  const f32 = values instanceof Float32Array ? values : Float32Array.from(values);
  // Float32Array is in the machine's byte order; every platform Node runs on is little-endian.
  return Buffer.from(f32.buffer, f32.byteOffset, f32.byteLength).toString('base64');
}
