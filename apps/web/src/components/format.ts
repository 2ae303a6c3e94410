import { fmt } from '@creditlab/charts';

export { fmt };

/** Up to 1,000,000 %: beyond that a rate is no rate. */
const MAX_PERCENT_FRACTION = 1e4;

/**
 * A rate as a percentage. A value far outside [0, 1] (a metric named like a rate that is not one)
 * goes as the number itself, since 100 × 1e307 is Infinity and "1e+300 %" says nothing.
 */
export function pct(v: number | null | undefined): string {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  return Math.abs(v) <= MAX_PERCENT_FRACTION ? `${(100 * v).toFixed(0)} %` : fmt(v);
}

/** A moment as `2026-12-03 05:40`, local time: "03/12/2026" read as March in half the world. */
export function when(iso: string | null | undefined): string {
  if (!iso) return '–';
  const d = new Date(iso);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}`;
}

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
