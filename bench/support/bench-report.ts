import { cpus, totalmem } from 'node:os';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const BENCHMARKS_MD = path.resolve(__dirname, '../../docs/benchmarks.md');

/** One line naming the machine, so figures are never read without their context. */
export function machineLine(): string {
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  return `${cpu}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${process.platform}/${process.arch}`;
}

/**
 * Replaces this benchmark's section of docs/benchmarks.md (or of `file`) between its markers,
 * keeping the sections other scripts wrote and any hand-written text outside the markers.
 */
export function writeSection(
  id: string,
  body: string,
  file = BENCHMARKS_MD,
  preamble = '# Benchmarks\n\nWritten by the scripts in `bench/`; each section says how it was produced. Re-run a script to refresh its section.\n',
): void {
  const start = `<!-- bench:${id}:start -->`;
  const end = `<!-- bench:${id}:end -->`;
  const section = `${start}\n${body.trim()}\n${end}`;
  let doc = existsSync(file) ? readFileSync(file, 'utf8') : preamble;
  const from = doc.indexOf(start);
  const to = doc.indexOf(end);
  doc =
    from >= 0 && to > from
      ? doc.slice(0, from) + section + doc.slice(to + end.length)
      : `${doc.trimEnd()}\n\n${section}\n`;
  writeFileSync(file, doc);
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

export const fmt = (x: number, digits = 2) => x.toFixed(digits);
