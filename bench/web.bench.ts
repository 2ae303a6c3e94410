/**
 * `npm run bench:web`: the web app in Debian's Chromium against a real server and database, timing
 * how long (1) the run page of a run of about 1,000,000 steps with a metric history and (2) the
 * compare page of three methods over a 100,000-step iteration take to become interactive: from
 * navigation until every section has its data and charts drawn and the page's main thread is idle.
 * Writes its section of docs/benchmarks.md.
 */
import { spawnSync } from 'node:child_process';
import { CreditlabClient } from '@creditlab/client';
import type { ClientEvent } from '@creditlab/events';
import type { Page } from 'playwright-core';
import { startBrowser } from '../test/support/browser';
import { ADMIN_KEY } from '../test/support/test-server';
import { fmt, machineLine, median, writeSection } from './support/bench-report';
import { startBenchServer } from './support/bench-server';
import { BENCH_ITERATION, ingestRun } from './support/synthetic-ingest';

const RUN_STEPS = Number(process.env.BENCH_WEB_RUN_STEPS ?? 1_000_000);
const COMPARE_STEPS = Number(process.env.BENCH_WEB_COMPARE_STEPS ?? 100_000);
const LOADS = 5;

// Functions passed to the page run there, where these exist (this program has no DOM types).
declare const requestIdleCallback: (callback: () => void) => void;
declare const sessionStorage: { setItem(key: string, value: string): void };
declare const location: { protocol: string };

/** What a trainer logs after each iteration: a few metrics, a held-out evaluation every 5th. */
function metrics(iteration: number): ClientEvent[] {
  const t = iteration / 50;
  const events: ClientEvent[] = [
    {
      id: crypto.randomUUID(),
      type: 'metrics.logged',
      data: {
        iteration,
        metrics: {
          successRate: 1 - Math.exp(-t),
          meanReturn: 1 - Math.exp(-t),
          loss: Math.exp(-t),
          entropy: 1.5 - t / 10,
          approxKl: 0.01,
          clipFraction: 0.1,
        },
      },
    },
  ];
  if (iteration % 5 === 4)
    events.push({
      id: crypto.randomUUID(),
      type: 'evaluation.logged',
      data: { iteration, successRate: 1 - Math.exp(-t * 0.8) },
    });
  return events;
}

interface Load {
  ms: number;
  /** The slowest API request of the load, by the browser's timing. */
  slowestApiMs: number;
}

/** Navigates and waits until `ready` holds and the main thread is idle; returns the wall time. */
async function timeLoad(page: Page, url: string, ready: string[]): Promise<Load> {
  const api: number[] = [];
  const onDone = (r: import('playwright-core').Request) => {
    if (new URL(r.url()).pathname === '/graphql') api.push(r.timing().responseEnd);
  };
  page.on('requestfinished', onDone);
  const t0 = performance.now();
  await page.goto(url, { waitUntil: 'commit' });
  for (const selector of ready) await page.locator(selector).first().waitFor({ timeout: 300_000 });
  await page.evaluate(() => new Promise<void>((resolve) => requestIdleCallback(() => resolve())));
  const ms = performance.now() - t0;
  page.off('requestfinished', onDone);
  return { ms, slowestApiMs: Math.max(0, ...api) };
}

async function measure(
  page: Page,
  url: string,
  ready: string[],
): Promise<{ first: Load; warm: Load[] }> {
  const first = await timeLoad(page, url, ready);
  const warm: Load[] = [];
  for (let i = 0; i < LOADS; i++) warm.push(await timeLoad(page, url, ready));
  return { first, warm };
}

const row = (what: string, m: { first: Load; warm: Load[] }) =>
  `| ${what} | ${fmt(m.first.ms / 1000, 2)} s | ${fmt(median(m.warm.map((l) => l.ms)) / 1000, 2)} s | ${fmt(median(m.warm.map((l) => l.slowestApiMs)), 0)} ms |`;

async function main(): Promise<void> {
  const build = spawnSync(process.execPath, ['scripts/web-build.mjs'], {
    stdio: 'inherit',
    timeout: 600_000,
  });
  if (build.status !== 0) throw new Error('the web app did not build');
  const bench = await startBenchServer({ CREDITLAB_ESTIMATOR_THREADS: '2' });
  const client = new CreditlabClient({ url: bench.server.url, apiKey: ADMIN_KEY, batchSize: 50 });
  const browser = await startBrowser();
  try {
    console.log(`ingesting a run of ${RUN_STEPS} steps with metrics...`);
    const big = await ingestRun(client, 'web bench: long run', BENCH_ITERATION, RUN_STEPS, metrics);
    console.log(`ingesting one iteration of ${COMPARE_STEPS} steps...`);
    const wide = await ingestRun(
      client,
      'web bench: wide iteration',
      { ...BENCH_ITERATION, groups: 100_000, maxTotalSteps: COMPARE_STEPS },
      COMPARE_STEPS,
    );
    // The steady state: PostgreSQL's autovacuum analyses the freshly loaded tables within a minute
    // or so; until then the planner works from the statistics of nearly empty tables.
    await bench.pool.query('ANALYZE');
    // Signed in: the key in the tab's session, as the sign-in form leaves it (the app's pages only).
    await browser.context.addInitScript((key) => {
      if (location.protocol === 'http:') sessionStorage.setItem('creditlab.apiKey', key);
    }, ADMIN_KEY);
    const page = await browser.newPage();
    const runPage = await measure(page, `${bench.server.url}/runs/${big.id}`, [
      '[data-testid=curve-successRate][data-rendered]',
      '[data-testid=curve-evaluation\\.successRate][data-rendered]',
      '[data-testid=iterations-table]',
      '[data-testid=events-table]',
      'text=No recompute jobs.',
    ]);
    console.log(row('run page', runPage));
    const comparePage = await measure(page, `${bench.server.url}/runs/${wide.id}/compare`, [
      '[data-testid=density][data-rendered]',
      '[data-testid=histogram-2][data-rendered]',
      '[data-testid=disagreements-table]',
    ]);
    console.log(row('compare page', comparePage));
    if (browser.errors.length) throw new Error(`console errors: ${browser.errors.join('\n')}`);
    writeSection(
      'web',
      `
## Web app: time to interactive (\`npm run bench:web\`)

Machine: ${machineLine()}. Run on ${new Date().toISOString().slice(0, 10)}.
Command: \`npm run bench:web\` (\`BENCH_WEB_RUN_STEPS\`, default 1,000,000; \`BENCH_WEB_COMPARE_STEPS\`, default 100,000).
The production build of the app served by a server process on an embedded PostgreSQL, driven by Debian's Chromium
(headless, 1400 × 900). Interactive: from navigation until every section has its data and its charts are drawn, and
the page's main thread is idle (\`requestIdleCallback\`). Measured after \`ANALYZE\` (the statistics autovacuum gathers within a minute of a bulk load). "First load" is the first visit after ingest (empty browser
cache; for compare, the three advantage sets are computed then); "later loads" the median of ${LOADS} reloads.

| page | first load | later loads (median) | slowest API call (median) |
|---|---:|---:|---:|
${row(`run page: ${big.steps.toLocaleString('en')} steps in ${big.iterations} iterations, curves of 7 metrics, iterations table, events, jobs`, runPage)}
${row(`compare page: gigpo, grpo, gaca over one iteration of ${wide.steps.toLocaleString('en')} steps (summary, 3 histograms, density, disagreements)`, comparePage)}
`,
    );
  } finally {
    await browser.close();
    await bench.close();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
