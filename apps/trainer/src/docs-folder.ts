import { realpathSync } from 'node:fs';
import path from 'node:path';

/**
 * The checkout's docs folder, where reports go by default. Compiled commands run from a build under
 * node_modules/.cache whose `docs` is a link to the checkout's; resolving the link makes the
 * "wrote …" lines name the file a user opens, not a path inside the cache.
 */
export function docsFolder(): string {
  const docs = path.resolve(__dirname, '../../../docs');
  try {
    return realpathSync(docs);
  } catch {
    return docs; // not there yet: the report creates it
  }
}
