import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnTracked } from './process-registry';

/** Debian's Chromium (`apt-get install chromium`; `.ci/run` installs it): a download of its own fails here. */
export const CHROMIUM = process.env.CREDITLAB_CHROMIUM ?? '/usr/bin/chromium';

/**
 * Flags for a headless Chromium as root in a closed network: no sandbox (root), no GPU, and none of
 * its background connections (refused here, and slow to fail).
 */
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
  '--disable-quic',
  '--disable-features=Translate,MediaRouter,OptimizationHints',
  '--remote-debugging-port=0',
];

export interface TestBrowser {
  browser: Browser;
  context: BrowserContext;
  /** Console errors and page errors seen so far, on every page of the context. */
  errors: string[];
  newPage(): Promise<Page>;
  close(): Promise<void>;
}

/**
 * Chromium started as a tracked child (it dies with the spec file whatever happens), in a fresh
 * profile, driven by playwright-core over the DevTools protocol.
 */
export async function startBrowser(viewport = { width: 1400, height: 900 }): Promise<TestBrowser> {
  const profile = mkdtempSync(path.join(tmpdir(), 'creditlab-chromium-'));
  const child = spawnTracked(CHROMIUM, [...FLAGS, `--user-data-dir=${profile}`, 'about:blank'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const endpoint = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Chromium did not start:\n${stderr}`)), 60_000);
    child.stderr?.on('data', (c: Buffer) => {
      stderr += c.toString();
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once('exit', (code) => reject(new Error(`Chromium exited (${code}):\n${stderr}`)));
  });
  const browser = await chromium.connectOverCDP(endpoint);
  const context = await browser.newContext({ viewport });
  const errors: string[] = [];
  const watch = (page: Page) => {
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(`${page.url()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => errors.push(`${page.url()}: ${e.message}`));
  };
  context.on('page', watch);
  return {
    browser,
    context,
    errors,
    newPage: () => context.newPage(),
    close: async () => {
      await browser.close().catch(() => undefined);
      // Its renderers and helpers are in its process group (spawnTracked): all of them go.
      try {
        process.kill(-(child.pid as number), 'SIGKILL');
      } catch {
        // already gone
      }
      await new Promise((resolve) =>
        child.exitCode !== null || child.signalCode !== null
          ? resolve(null)
          : child.once('exit', resolve),
      );
      rmSync(profile, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    },
  };
}
