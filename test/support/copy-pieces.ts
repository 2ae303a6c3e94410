/** Text-format COPY lines cut into buffers of `size` bytes, wherever the cut falls (mid-row, mid-character). */
export function cut(rows: string[], size: number): Buffer[] {
  const all = Buffer.from(rows.join(''));
  const pieces: Buffer[] = [];
  for (let at = 0; at < all.length; at += size) pieces.push(all.subarray(at, at + size));
  return pieces;
}
