import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * The read-only `shared/` folder (specs, conformance fixtures) that sits beside
 * the checkout; CREDITLAB_SHARED_DIR overrides. Tests fail, never skip, when it
 * is missing: the fixtures are the point of those tests.
 */
export function sharedDir(): string {
  const dir = process.env.CREDITLAB_SHARED_DIR ?? path.resolve(__dirname, '../../../shared');
  if (!existsSync(path.join(dir, 'fixtures'))) {
    throw new Error(
      `shared fixtures not found at ${dir} (set CREDITLAB_SHARED_DIR to the shared/ folder)`,
    );
  }
  return dir;
}
