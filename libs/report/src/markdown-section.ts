import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';

/** One line naming the machine, so figures are never read without their context. */
export function machineLine(): string {
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  // The load says how much else ran meanwhile: absolute rates on a busy machine are pessimistic.
  const [one, , fifteen] = loadavg().map((x) => x.toFixed(1));
  return `${cpu}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${process.platform}/${process.arch}; load average ${one} (1 min), ${fifteen} (15 min) when written`;
}

/**
 * Replaces a script's section of a generated document (docs/benchmarks.md, docs/experiments.md) between its markers,
 * keeping the sections other scripts wrote and any hand-written text outside the markers.
 */
export function writeSection(id: string, body: string, file: string, preamble: string): void {
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
