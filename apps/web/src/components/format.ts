import { fmt } from '@creditlab/charts';

export { fmt };

export const pct = (v: number | null | undefined) =>
  v === null || v === undefined || Number.isNaN(v) ? '–' : `${(100 * v).toFixed(0)} %`;

export const when = (iso: string | null | undefined) =>
  iso ? new Date(iso).toLocaleString('en-GB', { dateStyle: 'short', timeStyle: 'short' }) : '–';

export const shortId = (id: string) => id.slice(0, 8);

/** Methods travel in page URLs (not secret) as JSON: names with parameters. */
export function methodsParam(
  methods: { name: string; params?: Record<string, unknown> }[],
): string {
  return JSON.stringify(
    methods.map((m) => (m.params && Object.keys(m.params).length ? m : { name: m.name })),
  );
}

export function parseMethods(
  text: string | null,
): { name: string; params?: Record<string, never> }[] {
  if (!text) return [];
  try {
    const v = JSON.parse(text) as unknown;
    return Array.isArray(v)
      ? v.filter((m): m is { name: string } => typeof (m as { name?: unknown })?.name === 'string')
      : [];
  } catch {
    return [];
  }
}

export function methodLabel(m: { name: string; params?: Record<string, unknown> }): string {
  const p = Object.entries(m.params ?? {});
  return p.length
    ? `${m.name} (${p.map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(', ')})`
    : m.name;
}
