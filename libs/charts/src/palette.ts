/**
 * One colour per estimator, the same in the web app, the trainer's PNGs and the docs (Tableau 10:
 * distinct for the nine registered methods, readable on white).
 */
export const METHOD_COLOURS: Readonly<Record<string, string>> = {
  grpo: '#4e79a7',
  gigpo: '#f28e2b',
  gaca: '#e15759',
  'gated-bepo': '#76b7b2',
  gagpo: '#59a14f',
  bipace: '#edc948',
  rloo: '#b07aa1',
  'ppo-gae': '#ff9da7',
  reinforce: '#9c755f',
};

/** For names outside the registry (a future estimator): stable, from the name. */
const SPARE = ['#bab0ac', '#1f77b4', '#8c564b', '#17becf', '#bcbd22', '#7f7f7f'];

export function methodColour(method: string): string {
  const known = METHOD_COLOURS[method];
  if (known) return known;
  let h = 0;
  for (const c of method) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return SPARE[h % SPARE.length] as string;
}

/** Advantage cells: blue for credit, red for blame, white at zero (diverging, colour-blind safe). */
export function signedColour(value: number, scale: number): string {
  const t = Math.max(-1, Math.min(1, scale > 0 ? value / scale : 0));
  const [r, g, b] = t >= 0 ? [33, 102, 172] : [178, 24, 43];
  const a = Math.abs(t);
  const mix = (c: number) => Math.round(255 + (c - 255) * a);
  return `rgb(${mix(r)}, ${mix(g)}, ${mix(b)})`;
}
