import { chmod, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { UserIds } from './postgres-user';

/**
 * `mkdir -p`, and the directories it created get `mode` whatever the umask (a umask of 077 would
 * otherwise make them unreachable for PostgreSQL's own user).
 */
export async function makeDirectory(dir: string, mode: number): Promise<void> {
  const first = await mkdir(dir, { recursive: true });
  if (first === undefined) return;
  for (let d = dir; ; d = path.dirname(d)) {
    await chmod(d, mode);
    if (d === first || d === path.dirname(d)) return;
  }
}

/**
 * The first directory on the way to `target` (itself excluded) that `user` may not enter, with
 * its mode; undefined if every one is traversable. Checked by permission bits, as the kernel does.
 */
export async function unreachableAncestor(
  target: string,
  user: UserIds,
): Promise<{ dir: string; mode: string; owner: number } | undefined> {
  const ancestors: string[] = [];
  for (let d = path.dirname(path.resolve(target)); ; d = path.dirname(d)) {
    ancestors.unshift(d);
    if (d === path.dirname(d)) break;
  }
  for (const dir of ancestors) {
    const s = await stat(dir);
    const bit = s.uid === user.uid ? 0o100 : s.gid === user.gid ? 0o010 : 0o001;
    if ((s.mode & bit) === 0)
      return { dir, mode: (s.mode & 0o777).toString(8).padStart(3, '0'), owner: s.uid };
  }
  return undefined;
}
