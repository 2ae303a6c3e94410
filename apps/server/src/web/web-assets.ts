import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * The built web app (`apps/web/dist`, made by `npm start` or `npm run build`). From the sources this
 * file is apps/server/src/web; in the production build dist/apps/server/src/web, and the build copies
 * the app to dist/apps/web/dist: the same relative path in both.
 */
export const WEB_DIST = path.resolve(__dirname, '../../../web/dist');

/** What `/` answers when the app was never built (e.g. installed without dev dependencies). */
const NOT_BUILT = `<!doctype html><meta charset="utf-8"><title>Creditlab</title>
<p>The web app is not built. Run <code>npm install</code> (with dev dependencies) and <code>npm start</code>,
or <code>npm run build:web</code>. The API is at <code>/graphql</code> and <code>/v1</code>.</p>`;

/** The app's files, resolved safely: a request can never reach outside the dist folder. */
export class WebAssets {
  constructor(readonly root: string = WEB_DIST) {}

  /** The file a URL path names, if it exists under the root (`..` and absolute tricks refused). */
  file(urlPath: string): string | undefined {
    let decoded: string;
    try {
      decoded = decodeURIComponent(urlPath);
    } catch {
      return undefined;
    }
    const full = path.resolve(this.root, `.${path.posix.normalize(`/${decoded}`)}`);
    if (!full.startsWith(this.root + path.sep)) return undefined;
    try {
      return statSync(full).isFile() ? full : undefined;
    } catch {
      return undefined;
    }
  }

  /** index.html, read each time (a rebuild while the server runs is picked up), or the notice. */
  indexHtml(): string {
    const index = path.join(this.root, 'index.html');
    return existsSync(index) ? readFileSync(index, 'utf8') : NOT_BUILT;
  }
}
