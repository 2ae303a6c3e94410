import { machineLine, writeSection as writeDocumentSection } from '@creditlab/report';
import path from 'node:path';

export const BENCHMARKS_MD = path.resolve(__dirname, '../../docs/benchmarks.md');

const BENCHMARKS_PREAMBLE =
  '# Benchmarks\n\nWritten by the scripts in `bench/`; each section says how it was produced. Re-run a script to refresh its section.\n';

export { machineLine };

/** Replaces this benchmark's section of docs/benchmarks.md (or of `file`). */
export function writeSection(id: string, body: string, file = BENCHMARKS_MD): void {
  writeDocumentSection(id, body, file, BENCHMARKS_PREAMBLE);
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

export const fmt = (x: number, digits = 2) => x.toFixed(digits);

/** The command as run: `npm run <script>` after those of `settings` that are set. */
export function benchCommand(script: string, settings: string[]): string {
  const env = settings
    .filter((name) => process.env[name] !== undefined)
    .map((name) => `${name}=${process.env[name]} `);
  return `${env.join('')}npm run ${script}`;
}
