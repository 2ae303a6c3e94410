import { readFileSync } from 'node:fs';

/** A field of /proc/<pid>/status in bytes (VmRSS: resident now; VmHWM: the peak so far). */
export function procStatusBytes(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`));
  const kib = line ? /(\d+)\s*kB/.exec(line)?.[1] : undefined;
  if (kib === undefined) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(kib) * 1024;
}

export const mib = (bytes: number) => bytes / 2 ** 20;
