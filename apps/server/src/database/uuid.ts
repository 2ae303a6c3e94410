const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `s` can be a uuid column's value: anything else would make PostgreSQL raise instead of find nothing. */
export const isUuid = (s: string): boolean => UUID.test(s);

/**
 * The uuids that start with `prefix` (hex digits, any case, hyphens anywhere or nowhere), as the
 * bounds of a range: uuids compare byte by byte, which is their hex text's order, so the range
 * is what the primary key's index can walk. Null for text no uuid starts with.
 */
export function uuidPrefixRange(prefix: string): { gte: string; lte: string } | null {
  const hex = prefix.replace(/-/g, '').toLowerCase();
  if (!/^[0-9a-f]*$/.test(hex) || hex.length > 32) return null;
  const layout = (d: string) =>
    `${d.slice(0, 8)}-${d.slice(8, 12)}-${d.slice(12, 16)}-${d.slice(16, 20)}-${d.slice(20)}`;
  return { gte: layout(hex.padEnd(32, '0')), lte: layout(hex.padEnd(32, 'f')) };
}
