import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { CreditlabClient, newEventId } from '@creditlab/client';
import { seededRandom } from '@creditlab/random';
import { startBrowser, type TestBrowser } from './support/browser';
import { npmRun } from './support/cli';
import { ADMIN_KEY, gql, startTestServer, type ServerProcess } from './support/test-server';

/**
 * The web app in a real Chromium against the real server and database, on runs the trainer made: a
 * run and a fork of it under another method. Screenshots go to CREDITLAB_UI_SCREENSHOTS (docs/images
 * when the docs are refreshed), else to a temporary folder.
 */
const SHOTS = process.env.CREDITLAB_UI_SCREENSHOTS
  ? path.resolve(process.env.CREDITLAB_UI_SCREENSHOTS)
  : path.join(tmpdir(), `creditlab-ui-${process.pid}`);

// Functions passed to page.evaluate run in the page, where these exist (this program has no DOM types).
interface PageNode {
  textContent: string | null;
  getAttribute(name: string): string | null;
}
declare const document: {
  querySelector(selector: string): PageNode | null;
  querySelectorAll(selector: string): ArrayLike<PageNode>;
  documentElement: { scrollWidth: number; clientWidth: number };
};
declare const sessionStorage: { getItem(key: string): string | null };
declare const location: { href: string };
interface PageStyled {
  style: { background: string };
}
interface SelectNode {
  value: string;
  dispatchEvent(event: unknown): boolean;
}
declare const Event: new (type: string, init: { bubbles: boolean }) => unknown;

let server: ServerProcess;
let browser: TestBrowser;
let page: Page;
let parentId: string;
let forkId: string;
const bearers = new Set<string>();

async function train(args: string[]): Promise<string> {
  const env = { CREDITLAB_URL: server.url, CREDITLAB_API_KEY: ADMIN_KEY };
  const r = await npmRun('train', ['--iterations', '3', ...args], env);
  expect(r.stderr).not.toMatch(/error/i);
  expect(r.code).toBe(0);
  return r.stdout.trim().split('\n').at(-1)!;
}

const shot = (name: string) =>
  page.screenshot({ path: path.join(SHOTS, `ui-${name}.png`), fullPage: false });

async function data<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const answer = await gql<T>(server, query, variables);
  expect(answer.errors).toBeUndefined();
  return answer.data!;
}

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await startTestServer();
  parentId = await train([
    '--env',
    'sokoban-tiny',
    '--tasks',
    '2',
    '--group-size',
    '4',
    '--method',
    'gigpo',
  ]);
  forkId = await train(['--fork', parentId, '--method', 'grpo']);
  browser = await startBrowser();
  page = await browser.newPage();
  page.on('request', (r) => {
    if (new URL(r.url()).pathname === '/graphql' && r.method() === 'POST')
      bearers.add(r.headers().authorization ?? '');
    expect(r.url()).not.toContain(ADMIN_KEY);
  });
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

test('sign in with an API key: kept for the session, sent as a bearer header, never in a URL', async () => {
  await page.goto(`${server.url}/`);
  await shot('sign-in');
  await page.getByLabel('API key').fill(ADMIN_KEY);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('runs-table').waitFor();
  expect(await page.evaluate(() => sessionStorage.getItem('creditlab.apiKey'))).toBe(ADMIN_KEY);
  expect(page.url()).not.toContain(ADMIN_KEY);
  expect([...bearers]).toEqual([`Bearer ${ADMIN_KEY}`]);
  await expectRows(2);
  await shot('runs');
});

test('the runs list shows the iterations each run trained on', async () => {
  // Three each, then the checkpoint after the last (iteration 3): lastIteration + 1 said 4.
  const header = await page.locator('[data-testid=runs-table] th').allTextContents();
  const column = header.indexOf('Iterations') + 1;
  expect(column).toBeGreaterThan(0);
  const cells = page.locator(`[data-testid=run-row] td:nth-child(${column})`);
  expect(await cells.allTextContents()).toEqual(['3', '3']);
});

async function expectRows(n: number): Promise<void> {
  await page.waitForFunction(
    (want) => document.querySelectorAll('[data-testid=run-row]').length === want,
    n,
  );
}

test('filter runs by method and status', async () => {
  await page.getByLabel('Method').selectOption('grpo');
  await expectRows(1);
  await expect(page.getByTestId('run-row').first().textContent()).resolves.toContain('grpo');
  await page.locator(`a[href="/runs/${forkId}"]`).waitFor();
  await page.getByLabel('Method').selectOption('');
  await page.getByLabel('Status').selectOption('running');
  await page.getByText('No runs match.').waitFor();
  await page.getByLabel('Status').selectOption('completed');
  await expectRows(2);
});

test('two filters changed before the page re-renders both apply', async () => {
  // Both changes in one task of the page: the second must start from the address the first made,
  // not from the filters of the last render (which would drop the method filter here).
  const method = await page.getByLabel('Method').elementHandle();
  const status = await page.getByLabel('Status').elementHandle();
  await page.evaluate(
    ([m, s]) => {
      for (const [select, value] of [
        [m, 'grpo'],
        [s, ''],
      ] as [SelectNode, string][]) {
        select.value = value;
        select.dispatchEvent(new Event('change', { bubbles: true }));
      }
    },
    [method, status],
  );
  await expectRows(1);
  const url = new URL(page.url());
  expect([url.searchParams.get('method'), url.searchParams.get('status')]).toEqual(['grpo', null]);
  await page.getByLabel('Method').selectOption('');
  await expectRows(2);
});

test('Back undoes a filter picked from a list and stays in the app; typed text follows the address', async () => {
  const start = page.url();
  await page.getByLabel('Method').selectOption('grpo');
  await expectRows(1);
  await page.getByLabel('Name contains').fill('no such run');
  await page.getByText('No runs match.').waitFor();
  // Typing replaced the entry of the method's choice; Back goes to before that choice.
  await page.goBack();
  await expectRows(2);
  expect(page.url()).toBe(start);
  expect(await page.getByLabel('Name contains').inputValue()).toBe('');
  await page.goForward();
  await page.getByText('No runs match.').waitFor();
  expect(await page.getByLabel('Name contains').inputValue()).toBe('no such run');
  expect(await page.getByLabel('Method').inputValue()).toBe('grpo');
  // The header's "Runs" link: every filter gone, the typed one too (it stayed in its field).
  await page.getByRole('link', { name: 'Runs', exact: true }).click();
  await expectRows(2);
  expect(await page.getByLabel('Name contains').inputValue()).toBe('');
  expect(await page.getByLabel('Method').inputValue()).toBe('');
});

test('a success column sorts the runs by their last value, highest first, as the API orders them', async () => {
  for (const [label, sort, metric] of [
    ['Training success', 'TRAINING_SUCCESS_DESC', 'successRate'],
    ['Held-out success', 'HELD_OUT_SUCCESS_DESC', 'evaluation.successRate'],
  ] as const) {
    await page.getByRole('button', { name: label }).click();
    await page.waitForURL((url) => url.searchParams.get('sort') === sort);
    const { runs } = await data<{ runs: { nodes: { id: string }[] } }>(
      `query($m: String) { runs(first: 25, sort: METRIC_DESC, sortMetric: $m) { nodes { id } } }`,
      { m: metric },
    );
    const want = runs.nodes.map((r) => `/runs/${r.id}`);
    await page.waitForFunction(
      (hrefs) =>
        Array.from(document.querySelectorAll('[data-testid=run-row] td:nth-child(2) a'))
          .map((a) => a.getAttribute('href'))
          .join() === hrefs.join(),
      want,
    );
    // The column sorted by says so, and reads highest first.
    const header = page.getByRole('columnheader', { name: label });
    await expect(header.getAttribute('aria-sort')).resolves.toBe('descending');
    const column = (await page.locator('[data-testid=runs-table] th').allTextContents()).findIndex(
      (h) => h.startsWith(label),
    );
    const shown = (
      await page.locator(`[data-testid=run-row] td:nth-child(${column + 1})`).allTextContents()
    ).map((t) => parseFloat(t));
    expect(shown.filter((v) => !Number.isNaN(v))).toEqual(
      [...shown.filter((v) => !Number.isNaN(v))].sort((a, b) => b - a),
    );
    await expect(page.getByLabel('Sort').inputValue()).resolves.toBe(sort);
  }
  await page.getByRole('link', { name: 'Runs', exact: true }).click();
  await expectRows(2);
});

test('runs ticked in the list are plotted together on the first one’s page', async () => {
  const { runs } = await data<{ runs: { nodes: { id: string; name: string }[] } }>(
    '{ runs(first: 10) { nodes { id name } } }',
  );
  const name = (id: string) => runs.nodes.find((r) => r.id === id)!.name;
  await page.getByLabel(`select ${name(forkId)}`).check();
  await page.getByLabel(`select ${name(parentId)}`).check();
  await page.getByRole('button', { name: 'Plot 2 runs together' }).click();
  await page.getByTestId('curves').waitFor();
  // The first ticked opens, the other overlaid from the address (a chip, not as its lineage).
  expect(new URL(page.url()).pathname).toBe(`/runs/${forkId}`);
  expect(new URL(page.url()).searchParams.get('with')).toBe(parentId);
  await page.locator('.chip', { hasText: name(parentId) }).waitFor();
  await page.goBack();
  await expectRows(2);
  // Back in the list, both are still ticked, in the order ticked; "clear" unticks them.
  await page.getByRole('button', { name: 'Plot 2 runs together' }).waitFor();
  await page.getByTestId('selection').getByRole('button', { name: 'clear' }).click();
  await expect(page.getByLabel(`select ${name(forkId)}`).isChecked()).resolves.toBe(false);
});

test('a run page draws one chart per logged metric, each with a series per run shown', async () => {
  await page.locator(`a[href="/runs/${parentId}"]`).first().click();
  await page.getByTestId('curves').waitFor();
  const { run } = await data<{
    run: {
      iterations: { metrics: Record<string, number>; evaluationSuccessRate: number | null }[];
    };
  }>(`query($id: ID!) { run(id: $id) { iterations { metrics evaluationSuccessRate } } }`, {
    id: parentId,
  });
  const names = new Set(run.iterations.flatMap((i) => Object.keys(i.metrics)));
  if (run.iterations.some((i) => i.evaluationSuccessRate !== null))
    names.add('evaluation.successRate');
  expect(names.size).toBeGreaterThan(3);
  const charts = page.locator('[data-testid^=curve-]');
  await expect(charts.count()).resolves.toBe(names.size);
  for (const name of names) await page.getByTestId(`curve-${name}`).waitFor();
  // The fork is overlaid where the server lists children; otherwise the run alone.
  const children = (await page.getByTestId('lineage').textContent())?.includes('fork at iteration')
    ? 2
    : 1;
  for (const s of await charts.evaluateAll((els) => els.map((e) => e.getAttribute('data-series'))))
    expect(Number(s)).toBeLessThanOrEqual(children);
  await expect(page.getByTestId('curve-successRate').getAttribute('data-series')).resolves.toBe(
    String(children),
  );
  await page.getByTestId('iterations-table').waitFor();
  await page.getByTestId('events-table').waitFor();
  await page.getByTestId('curve-successRate').scrollIntoViewIfNeeded();
  await shot('run');
  // Hovering a curve: the tooltip names the iteration (it said "1.00").
  const box = (await page.getByTestId('curve-successRate').boundingBox())!;
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page
    .getByText(/^iteration [0-2]$/)
    .first()
    .waitFor();
});

test('curves smooth as set, and the smoothing and overlaid runs are kept in the address', async () => {
  // The lineage hidden, the fork overlaid by hand instead, smoothed: all from the address alone.
  // (the fork named twice, and the run itself: each drawn once)
  await page.goto(
    `${server.url}/runs/${parentId}?lineage=0&with=${forkId},${forkId},${parentId}&smooth=0.8`,
  );
  const curve = page.getByTestId('curve-successRate');
  await curve.waitFor();
  await expect(page.getByTestId('smoothing').textContent()).resolves.toBe('0.80');
  await expect(curve.getAttribute('data-series')).resolves.toBe('2');
  await page.locator('.chip', { hasText: 'grpo' }).waitFor();
  expect(await page.locator('.chip').count()).toBe(1);
  // The tooltip gives each run's smoothed value and its raw one.
  await curve.scrollIntoViewIfNeeded();
  const box = (await curve.boundingBox())!;
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page
    .getByText(/\(raw \d+ %\)/)
    .first()
    .waitFor();
  // Each run named once with its method: "gigpo sokoban-tiny seed 1", not "… seed 1 (gigpo)".
  const tooltip = await curve.textContent();
  expect(tooltip).toMatch(/gigpo sokoban-tiny seed 1/);
  expect(tooltip).not.toContain('(gigpo)');
  await shot('run-smoothed');
  // The slider to its start: no smoothing, and the address says so.
  await page.getByLabel('Smoothing').focus();
  await page.keyboard.press('Home');
  await page.waitForFunction(
    () => document.querySelector('[data-testid=smoothing]')?.textContent === '0.00',
  );
  expect(new URL(page.url()).searchParams.get('smooth')).toBeNull();
  // Ten quick presses are ten steps (they were two: the address lagged the key presses). Several
  // rounds: a render of an earlier press that landed after later ones pulled the slider back by a
  // step in about one round of seven on a loaded machine.
  for (let round = 0; round < 10; round++) {
    for (let k = 0; k < 10; k++) await page.keyboard.press('ArrowRight');
    await page.waitForFunction(() => {
      const shown = document.querySelector('[data-testid=smoothing]')?.textContent;
      return Number(shown) === Number(new URL(location.href).searchParams.get('smooth'));
    });
    await expect(page.getByTestId('smoothing').textContent()).resolves.toBe('0.10');
    await page.keyboard.press('Home');
    await page.waitForFunction(
      () =>
        document.querySelector('[data-testid=smoothing]')?.textContent === '0.00' &&
        new URL(location.href).searchParams.get('smooth') === null,
    );
  }
  // The overlaid run removed: the address forgets it, and the charts draw this run alone.
  await page.locator('.chip', { hasText: 'grpo' }).click();
  await page.waitForFunction(
    () =>
      document.querySelector('[data-testid=curve-successRate]')?.getAttribute('data-series') ===
      '1',
  );
  expect(new URL(page.url()).searchParams.get('with')).toBeNull();
  // The overlay box finds a run by the start of its id (it found names only), hyphens or not.
  await page.getByLabel('Overlay another run').fill(forkId.replace(/-/g, '').slice(0, 12));
  await page.locator('.dropdown button').first().click();
  await page.locator('.chip', { hasText: 'grpo' }).waitFor();
  expect(new URL(page.url()).searchParams.get('with')).toBe(forkId);
  await page.locator('.chip', { hasText: 'grpo' }).click();
  // An address naming no run says so, and the page still draws.
  await page.goto(`${server.url}/runs/${parentId}?with=00000000-0000-4000-8000-000000000000`);
  await expect(page.getByTestId('missing-overlays').textContent()).resolves.toContain(
    '00000000-0000-4000-8000-000000000000',
  );
  await curve.waitFor();
  await page.goto(`${server.url}/runs/${parentId}`);
  await curve.waitFor();
});

test('compare three methods: summary, a histogram each, the pairwise density with its correlations', async () => {
  await page.getByRole('link', { name: 'Compare estimators' }).click();
  await page.getByTestId('density').waitFor();
  await expect(page.locator('[data-testid^=histogram-]').count()).resolves.toBe(3);
  const iteration = Number(
    /iteration (\d+)/.exec((await page.getByTestId('compare-scope').textContent()) ?? '')?.[1],
  );
  const { compare } = await data<{
    compare: {
      methods: { method: string; summary: { fractionZero: number } }[];
      pairs: { a: string; b: string; pearson: number | null; spearman: number | null }[];
    };
  }>(
    `query($id: ID!, $its: [Int!]) { compare(runId: $id, methods: [{name: "gigpo"}, {name: "grpo"}, {name: "gaca"}], iterations: $its) { methods { method summary { fractionZero } } pairs { a b pearson spearman } } }`,
    { id: parentId, its: [iteration] },
  );
  const summary = await page.getByTestId('summary-table').locator('tbody tr').allTextContents();
  expect(summary.map((row) => compare.methods.find((m) => row.includes(m.method))?.method)).toEqual(
    ['gigpo', 'grpo', 'gaca'],
  );
  const pairs = await page.getByTestId('pairs-table').locator('tbody tr').allTextContents();
  // a correlation is undefined (null, shown as –) where a method is constant over the iteration
  const shown = (v: number | null) => (v === null ? '–' : v.toFixed(3));
  compare.pairs.forEach((p, i) => {
    expect(pairs[i]).toContain(shown(p.pearson));
    expect(pairs[i]).toContain(shown(p.spearman));
  });
  const density = await page.getByTestId('density').getAttribute('aria-label');
  expect(density).toBe(`density of ${compare.pairs[0]!.a} against ${compare.pairs[0]!.b}`);
  // An iteration where every advantage is 0 says why there is nothing to see, and only then.
  const allZero = compare.methods.every((m) => m.summary.fractionZero === 1);
  await expect(page.getByTestId('compare-all-zero').count()).resolves.toBe(allZero ? 1 : 0);
});

test('a disagreement opens its group: the advantages shown are the API’s, diagnostics on hover', async () => {
  // Every iteration: in the last one alone every group may end one way, every advantage constant,
  // and nothing disagrees.
  await page.goto(`${page.url().split('?')[0]}?it=0-2`);
  await page.getByTestId('disagreement-row').first().waitFor();
  expect(await page.getByTestId('compare-all-zero').count()).toBe(0);
  await shot('compare');
  const row = page.getByTestId('disagreement-row').first();
  const [trajectoryId, step] = await row
    .locator('td')
    .evaluateAll((tds) => [tds[2]!.textContent!, tds[3]!.textContent!]);
  await row.getByTestId('trajectory-link').click();
  await page.getByTestId('group-view').waitFor();
  const groupId = (await page.getByTestId('group-id').textContent())!;
  const iteration = Number(/iterations\/(\d+)\/groups/.exec(page.url())?.[1]);
  const { run } = await data<{
    run: {
      groups: {
        nodes: {
          id: string;
          trajectories: {
            id: string;
            steps: { index: number; a: number; b: number; c: number }[];
          }[];
        }[];
      };
    };
  }>(
    `query($id: ID!, $it: Int!) { run(id: $id) { groups(iteration: $it, first: 20) { nodes { id trajectories { id steps { index
      a: advantage(method: {name: "gigpo"}) b: advantage(method: {name: "grpo"}) c: advantage(method: {name: "gaca"}) } } } } } }`,
    { id: parentId, it: iteration },
  );
  const group = run.groups.nodes.find((g) => g.id === groupId)!;
  const shown = await page.getByTestId('adv-cell').evaluateAll((cells) =>
    cells.map((c) => ({
      trajectory: c.closest('[data-testid=trajectory]')!.getAttribute('data-trajectory-id'),
      step: Number(c.closest('tr')!.getAttribute('data-step')),
      method: c.getAttribute('data-method'),
      value: Number(c.getAttribute('data-value')),
      text: c.firstChild?.textContent,
    })),
  );
  const want = group.trajectories.flatMap((t) =>
    t.steps.flatMap((s) => [
      { trajectory: t.id, step: s.index, method: 'gigpo', value: s.a },
      { trajectory: t.id, step: s.index, method: 'grpo', value: s.b },
      { trajectory: t.id, step: s.index, method: 'gaca', value: s.c },
    ]),
  );
  expect(shown.map(({ text: _text, ...cell }) => cell)).toEqual(want);
  for (const cell of shown)
    expect(Number(cell.text)).toBeCloseTo(cell.value, Math.abs(cell.value) < 1 ? 2 : 1);
  const focused = page.locator('tr.focus-row');
  await expect(focused.getAttribute('data-step')).resolves.toBe(step);
  await expect(
    focused
      .locator('xpath=ancestor::*[@data-testid="trajectory"]')
      .getAttribute('data-trajectory-id'),
  ).resolves.toBe(trajectoryId);
  await focused.locator('[data-method=gigpo]').hover();
  await expect(page.getByTestId('diagnostics').textContent()).resolves.toContain('stepGroupSize');
  await shot('trajectory');
});

test('start a recompute from the run page and watch it complete', async () => {
  await page.goto(`${server.url}/runs/${parentId}`);
  await page.getByLabel('Recompute method').selectOption('gagpo');
  // Iterations the form cannot read are named before anything is sent (a raw GraphQL error was).
  await page.getByLabel('Recompute iterations').fill('abc');
  await page
    .getByRole('alert')
    .getByText('iterations: "abc" is not an iteration or a range of them (e.g. 0,2,5-9, or all)')
    .waitFor();
  expect(await page.getByRole('button', { name: 'Start recompute' }).isDisabled()).toBe(true);
  await page.getByLabel('Recompute iterations').fill('0-2');
  await page.getByRole('button', { name: 'Start recompute' }).click();
  const job = page.getByTestId('job-row').first();
  await job.waitFor();
  await page.waitForFunction(
    () =>
      document.querySelector('[data-testid=job-row]')?.getAttribute('data-status') === 'completed',
    null,
    { timeout: 120_000 },
  );
  await expect(job.textContent()).resolves.toContain('gagpo');
  const { run } = await data<{
    run: { advantageSets: { method: string; iterations: number[] }[] };
  }>(`query($id: ID!) { run(id: $id) { advantageSets { method iterations } } }`, { id: parentId });
  expect(run.advantageSets.find((s) => s.method === 'gagpo')?.iterations).toEqual([0, 1, 2]);
  await expect(job.textContent()).resolves.toContain('3/3 iterations');
  // Named by what was given (it listed every default: "gagpo (gamma=0.95, lambda=…)").
  expect(await job.locator('td').nth(1).textContent()).toBe('gagpo');
  await page.getByTestId('jobs-table').scrollIntoViewIfNeeded();
  await shot('jobs');
  // A finished job leads to its result: compared with the run's own method, on its last iteration.
  await job.getByTestId('job-compare').click();
  await page.getByTestId('compare-scope').filter({ hasText: 'in iteration 2' }).waitFor();
  const summary = await page.getByTestId('summary-table').locator('tbody tr').allTextContents();
  expect(summary.map((row) => /^(gigpo|gagpo)/.exec(row)?.[1])).toEqual(['gigpo', 'gagpo']);
});

test('a fork’s page names its parent, overlays its curves, and offers its own method to recompute; dates read one way', async () => {
  const { run } = await data<{ run: { name: string } }>(
    'query($id: ID!) { run(id: $id) { name } }',
    { id: parentId },
  );
  await page.goto(`${server.url}/runs/${forkId}`);
  const lineage = page.getByTestId('lineage');
  // The parent was shown as its id.
  await lineage.getByRole('link', { name: run.name }).waitFor();
  expect(await lineage.textContent()).not.toContain(parentId);
  // Its curves overlay the parent's (they showed the fork alone).
  await page.waitForFunction(
    () =>
      document.querySelector('[data-testid=curve-successRate]')?.getAttribute('data-series') ===
      '2',
  );
  await page.getByLabel('parent, forks and retrains').waitFor();
  // The fork trains grpo: its recompute starts from grpo, not from gigpo whatever the run.
  const recompute = page.getByLabel('Recompute method');
  await recompute.locator('option').first().waitFor({ state: 'attached' }); // the registry's, once loaded
  expect(await recompute.inputValue()).toBe('grpo');
  await page.goto(`${server.url}/`);
  await page.getByTestId('run-row').first().waitFor();
  const header = await page.locator('[data-testid=runs-table] th').allTextContents();
  const created = await page
    .locator(`[data-testid=run-row] td:nth-child(${header.indexOf('Created') + 1})`)
    .first()
    .textContent();
  expect(created).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$/); // not 03/12/2026: March or December?
});

test('the estimators page lists the registry', async () => {
  await page.getByRole('link', { name: 'Estimators', exact: true }).click();
  const { estimators } = await data<{ estimators: { name: string }[] }>('{ estimators { name } }');
  await page.getByTestId('estimator').first().waitFor();
  await expect(page.getByTestId('estimator').count()).resolves.toBe(estimators.length);
  await shot('estimators');
});

test('GET /graphql in the browser opens GraphiQL from the app’s own assets, with the signed-in key', async () => {
  const outside: string[] = [];
  page.on('request', (r) => {
    if (
      !r.url().startsWith(server.url) &&
      !r.url().startsWith('data:') &&
      !r.url().startsWith('blob:')
    )
      outside.push(r.url());
  });
  await page.goto(`${server.url}/graphql`);
  // The editor loads its schema and workers first; then the run button sends the default query.
  await page.waitForFunction(() =>
    document.querySelector('.graphiql-query-editor')?.textContent?.includes('viewer'),
  );
  await page.locator('.graphiql-execute-button').click();
  // The default query's answer (the viewer: this key's prefix and role) shows: the key was sent.
  await page.waitForFunction((prefix) => {
    const text = document.querySelector('.graphiql-response')?.textContent ?? '';
    return text.includes(prefix) && text.includes('admin');
  }, ADMIN_KEY.split('_')[1]!);
  expect(outside).toEqual([]);
  await shot('graphql');
});

test('compare reads iterations as numbers and ranges, and says what it cannot read', async () => {
  await page.goto(`${server.url}/runs/${parentId}/compare?it=abc`);
  await page
    .getByRole('alert')
    .getByText('iterations: "abc" is not an iteration or a range of them (e.g. 0,2,5-9, or all)')
    .waitFor();
  expect(await page.getByLabel('Iterations').inputValue()).toBe('abc'); // kept, to be corrected
  await page.goto(`${server.url}/runs/${parentId}/compare?it=1-2`);
  await page.getByTestId('compare-scope').filter({ hasText: 'in iterations 1, 2' }).waitFor();
  expect(await page.getByLabel('Iterations').inputValue()).toBe('1,2');
  await page.goto(`${server.url}/runs/${parentId}/compare?m=garbage`);
  await page
    .getByRole('alert')
    .getByText(/^methods: the address's m is not a list/)
    .waitFor();
});

test('one method under two parameter sets: pairs and disagreements named as the summary names them, with their values', async () => {
  const methods = [{ name: 'gigpo', params: { gamma: 0.5 } }, { name: 'gigpo' }, { name: 'grpo' }];
  await page.goto(
    `${server.url}/runs/${parentId}/compare?it=1&m=${encodeURIComponent(JSON.stringify(methods))}`,
  );
  await page.getByTestId('disagreements-table').waitFor();
  const { compare } = await data<{
    compare: { pairs: { a: string; b: string; disagreements: { advantages: number[] }[] }[] };
  }>(
    `query($id: ID!, $m: [MethodInput!]!) { compare(runId: $id, methods: $m, iterations: [1]) { pairs { a b disagreements { advantages } } } }`,
    { id: parentId, m: methods },
  );
  expect(compare.pairs[0]).toMatchObject({ a: 'gigpo#0', b: 'gigpo#1' });
  // The pairs read as the summary does (they said "gigpo#0 vs gigpo#1").
  const firstPair = await page.getByTestId('pairs-table').locator('tbody tr').first().textContent();
  expect(firstPair).toContain('gigpo (gamma=0.5) vs gigpo');
  expect(firstPair).not.toContain('#');
  // What orders the list is said (it was not).
  await expect(page.getByTestId('disagreements-order').textContent()).resolves.toContain(
    'standardised',
  );
  // The table against the exact advantage names them so too (it said gigpo#0, gigpo#1).
  const reference = await page.getByTestId('reference-table').locator('tbody tr').allTextContents();
  expect(reference.map((row) => /^gigpo( \(gamma=0\.5\))?/.exec(row)?.[0])).toEqual([
    'gigpo (gamma=0.5)',
    'gigpo',
    undefined, // grpo
  ]);
  expect(reference.join()).not.toContain('#');
  const header = await page.locator('[data-testid=disagreements-table] th').allTextContents();
  expect(header.slice(6, 8)).toEqual(['gigpo (gamma=0.5)', 'gigpo']);
  // Both gigpo rows of the summary in gigpo's colour (they took two spare colours from "gigpo#0").
  const swatches = await page
    .locator('[data-testid=summary-table] tbody .swatch')
    .evaluateAll((spans) => spans.map((s) => (s as unknown as PageStyled).style.background));
  expect(swatches).toEqual(['rgb(242, 142, 43)', 'rgb(242, 142, 43)', 'rgb(78, 121, 167)']);
  // Each side's advantages are the API's (both columns read NaN: "gigpo#0" matched no method).
  const cells = await page.getByTestId('disagreement-row').first().locator('td').allTextContents();
  const [a, b] = compare.pairs[0]!.disagreements[0]!.advantages;
  for (const [shown, want] of [
    [cells[6], a],
    [cells[7], b],
  ] as [string, number][])
    expect(Math.abs(Number(shown) - want)).toBeLessThanOrEqual(0.01 * Math.abs(want) + 1e-3);
});

test('two settings that agree on every step are said to agree, with no table of zero gaps', async () => {
  const methods = [{ name: 'grpo' }, { name: 'grpo', params: { normalize: 'mean-std' } }];
  await page.goto(
    `${server.url}/runs/${parentId}/compare?it=1&m=${encodeURIComponent(JSON.stringify(methods))}`,
  );
  await expect(page.getByTestId('disagreements-none').textContent()).resolves.toContain(
    'agree on every step',
  );
  expect(await page.getByTestId('disagreements-table').count()).toBe(0);
});

test('a trajectory address with no such iteration says so instead of loading for ever', async () => {
  await page.goto(`${server.url}/runs/${parentId}/iterations/99/groups/`);
  await page.getByRole('alert').getByText('iteration 99 has no rollouts').waitFor();
  await page.goto(`${server.url}/runs/${parentId}/iterations/abc/groups/`);
  await page.getByRole('alert').getByText('"abc" is not an iteration number').waitFor();
  expect(await page.getByText('Loading the group').count()).toBe(0);
});

test('on a phone’s width every page keeps to the screen: tables scroll inside themselves', async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  try {
    for (const path of [
      '/',
      `/runs/${parentId}`,
      `/runs/${parentId}/compare`,
      `/runs/${parentId}/iterations/0/groups/`,
      '/estimators',
    ]) {
      await page.goto(`${server.url}${path}`);
      await page.locator('h1, [data-testid=runs-table]').first().waitFor();
      await page.waitForLoadState('networkidle');
      // The page scrolled sideways: 496 to 906 px wide (the header, the curves' grid, tables).
      const [width, screen] = await page.evaluate(() => [
        document.documentElement.scrollWidth,
        document.documentElement.clientWidth, // 390 less a scroll bar
      ]);
      expect({ path, width }).toEqual({ path, width: screen });
    }
  } finally {
    await page.setViewportSize({ width: 1400, height: 900 });
  }
});

test('a run named without spaces keeps its page to the screen', async () => {
  const client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
  const { id } = await client.createRun({ name: 'x'.repeat(190), env: 'e', method: 'grpo' });
  for (const width of [1400, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.goto(`${server.url}/runs/${id}`);
    await page.getByRole('link', { name: 'Compare estimators' }).waitFor();
    // It was 1437 px wide at 1280, the button past the header's edge.
    const [scroll, client_] = await page.evaluate(() => [
      document.documentElement.scrollWidth,
      document.documentElement.clientWidth,
    ]);
    expect({ width, scroll }).toEqual({ width, scroll: client_ });
  }
  await page.setViewportSize({ width: 1400, height: 900 });
});

test('a long run’s iterations are paged, newest first, down to its first', async () => {
  // Last among the pages' tests: the runs list above counts two runs.
  const client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
  const { id } = await client.createRun({ name: 'long', env: 'e', method: 'grpo' });
  await client.appendEvents(
    id,
    Array.from({ length: 201 }, (_, i) => ({
      id: newEventId(),
      type: 'metrics.logged' as const,
      data: { iteration: i, metrics: { loss: 1 / (i + 1) } },
    })),
  );
  await page.goto(`${server.url}/runs/${id}`);
  const pager = page.getByTestId('iterations-pager');
  const firstColumn = page.locator('[data-testid=iterations-table] tbody tr td:first-child');
  await pager.getByText('iterations 1–200 (200 of 201)').waitFor();
  expect(await firstColumn.count()).toBe(200);
  await pager.getByRole('button', { name: 'Older →' }).click();
  await pager.getByText('iterations 0–0 (1 of 201)').waitFor();
  expect(await firstColumn.allTextContents()).toEqual(['0']);
  expect(await pager.getByRole('button', { name: 'Older →' }).isDisabled()).toBe(true);
});

test('the trajectory page opens a group whose outcomes differ, and lists every group with its successes', async () => {
  const client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
  const { id } = await client.createRun({ name: 'groups', env: 'e', method: 'grpo' });
  const trajectory = (tid: string, reward: number) => ({
    id: tid,
    steps: [{ state: 's', action: 'a', reward }],
  });
  const groups = [
    { id: 'all-failed', trajectories: [trajectory('f1', 0), trajectory('f2', 0)] },
    { id: 'mixed', trajectories: [trajectory('m1', 1), trajectory('m2', 0)] },
    // past the first page of 100 groups (the page listed 100 and said "100+")
    ...Array.from({ length: 103 }, (_, k) => ({
      id: `g${k}`,
      trajectories: [trajectory(`t${k}`, 1)],
    })),
  ];
  await client.appendEvents(id, [
    { id: newEventId(), type: 'rollouts.appended', data: { iteration: 0, groups } },
  ]);
  await page.goto(`${server.url}/runs/${id}/iterations/0/groups/`);
  // It opened the first group, all zeros under group-relative methods.
  await page.getByTestId('group-id').filter({ hasText: 'mixed' }).waitFor();
  await expect(page.getByTestId('group-chosen').textContent()).resolves.toContain(
    'ended differently',
  );
  await expect(page.getByTestId('group-position').textContent()).resolves.toBe('group 2 of 105');
  const options = await page.getByLabel('Group').locator('option').allTextContents();
  expect(options.slice(0, 2)).toEqual([
    '1. all-failed · 0/2 succeeded',
    '2. mixed · 1/2 succeeded',
  ]);
  expect(options).toHaveLength(105);
  await page.getByLabel('Group').selectOption('g102');
  await page.getByTestId('group-id').filter({ hasText: 'g102' }).waitFor();
  expect(new URL(page.url()).pathname).toBe(`/runs/${id}/iterations/0/groups/g102`);
  await expect(page.getByTestId('group-position').textContent()).resolves.toBe('group 105 of 105');
});

test('a recompute of a run with no complete iteration says why it computed nothing', async () => {
  const client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
  const { id } = await client.createRun({ name: 'just started', env: 'e', method: 'grpo' });
  await page.goto(`${server.url}/runs/${id}`);
  await page.getByRole('button', { name: 'Start recompute' }).click();
  const job = page.getByTestId('job-row').first();
  await page.waitForFunction(
    () =>
      document.querySelector('[data-testid=job-row]')?.getAttribute('data-status') === 'completed',
    null,
    { timeout: 120_000 },
  );
  // It read "completed 0/0", with no word of why.
  await expect(job.getByTestId('job-empty').textContent()).resolves.toContain(
    'nothing to compute: a recompute with no iterations named takes the complete ones',
  );
  expect(await job.getByTestId('job-compare').count()).toBe(0);
  // A run created with no params or config says so (it showed "{}").
  await page.getByText('Config and parameters').click();
  await expect(page.getByTestId('run-params').textContent()).resolves.toBe(
    "none given: the method's defaults (see Estimators)",
  );
  await expect(page.getByTestId('run-config').textContent()).resolves.toBe('none given');
});

test('an overlaid run with no metrics says so; a smoothing out of range is written in the address as drawn', async () => {
  const client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
  const { id } = await client.createRun({ name: 'nothing logged', env: 'e', method: 'gaca' });
  await page.goto(`${server.url}/runs/${parentId}?with=${id}&smooth=5`);
  await page.getByTestId('curves').waitFor();
  const chip = page.locator('.chip', { hasText: 'nothing logged' });
  await expect(chip.getByTestId('overlay-no-metrics').textContent()).resolves.toContain(
    'no metrics logged',
  );
  await page.waitForURL((url) => url.searchParams.get('smooth') === '0.99');
  await page.goto(`${server.url}/runs/${parentId}?smooth=abc`);
  await page.getByTestId('curves').waitFor();
  await page.waitForURL((url) => !url.searchParams.has('smooth'));
});

test('the page and its size are kept in the address: Back from a run returns to the page it left; a long tag keeps to one line', async () => {
  const client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
  await data('mutation { createProject(name: "paging") { name } }');
  const longTag = 'sweep-2026-12-03-gigpo-gamma-ablation-with-many-settings-in-its-name';
  for (let k = 0; k < 27; k++)
    await client.createRun({
      name: `paged ${String(k).padStart(2, '0')}`,
      project: 'paging',
      env: 'e',
      method: 'grpo',
      tags: k === 0 ? ['short', longTag] : [],
    });
  await page.goto(`${server.url}/?project=paging&sort=NAME_ASC`);
  await expectRows(25);
  // A long tag keeps to one line (it broke at every hyphen), whole in its title.
  const [short, long] = await page.locator('[data-testid=run-row] .tag').all();
  const height = async (l: typeof short) => (await l!.boundingBox())!.height;
  expect(await height(long)).toBe(await height(short));
  await expect(long!.getAttribute('title')).resolves.toBe(longTag);
  await page.getByLabel('select paged 00').check();
  await page.getByRole('button', { name: 'Next →' }).click();
  await expectRows(2);
  // A ticked run that this page does not show is said to be elsewhere.
  await expect(page.getByTestId('selection-hidden').textContent()).resolves.toContain(
    '1 of them not on this page',
  );
  expect(new URL(page.url()).searchParams.get('pages')).toBeTruthy();
  await page.getByRole('link', { name: 'paged 26' }).click();
  await page
    .getByTestId('curves')
    .or(page.getByRole('heading', { name: 'paged 26' }))
    .first()
    .waitFor();
  await page.goBack();
  await expectRows(2);
  await page.getByText('page 2', { exact: true }).waitFor();
  // The run ticked on page 1 is still ticked (it was forgotten on Back).
  await page.getByRole('button', { name: 'Plot 1 run together' }).waitFor();
  await page.getByTestId('selection').getByRole('button', { name: 'clear' }).click();
  await page.getByLabel('per page').selectOption('50');
  await expectRows(27);
  const url = new URL(page.url());
  expect([url.searchParams.get('size'), url.searchParams.get('pages')]).toEqual(['50', null]);
  await page.reload();
  await expectRows(27);
  await expect(page.getByRole('button', { name: 'Next →' }).isDisabled()).resolves.toBe(true);
  // Another order starts again from the first page.
  await page.getByLabel('per page').selectOption('25');
  await page.getByRole('button', { name: 'Next →' }).click();
  await expectRows(2);
  await page.getByLabel('Sort').selectOption('CREATED_DESC');
  await expectRows(25);
  expect(new URL(page.url()).searchParams.get('pages')).toBeNull();
  // An address with a page the list cannot have offers the first page; an unknown sort is ignored.
  await page.goto(`${server.url}/?project=paging&pages=garbage`);
  await page
    .getByTestId('pages-invalid')
    .getByRole('button', { name: 'Go to the first page' })
    .click();
  await expectRows(25);
  await page.goto(`${server.url}/?project=paging&sort=__proto__`);
  await expectRows(25);
});

test('leaving a page while a chart is still being painted throws nothing', async () => {
  // A density of about a thousand cells on a CPU slowed 20-fold: the chart is still painting (in
  // slices, one per frame) when the page is left, which threw from the disposed chart before.
  const client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
  const { id } = await client.createRun({ name: 'spread', env: 'e', method: 'grpo' });
  const uniform = seededRandom(1);
  const groups = Array.from({ length: 100 }, (_, g) => ({
    id: `g${g}`,
    trajectories: Array.from({ length: 8 }, (_, t) => ({
      id: `g${g}t${t}`,
      steps: Array.from({ length: 4 }, (_, k) => ({
        state: `s${k}-${Math.floor(uniform() * 2)}`,
        action: 'a',
        reward: uniform(),
      })),
    })),
  }));
  await client.appendEvents(id, [
    { id: newEventId(), type: 'rollouts.appended', data: { iteration: 0, groups } },
  ]);
  const methods = [{ name: 'gigpo', params: { gamma: 0.5 } }, { name: 'grpo' }];
  await page.goto(
    `${server.url}/runs/${id}/compare?it=0&m=${encodeURIComponent(JSON.stringify(methods))}`,
  );
  const density = page.locator('[data-testid=density][data-rendered]');
  await density.waitFor();
  const { compare } = await data<{ compare: { pairs: { density: { counts: number[] } }[] } }>(
    `query($id: ID!, $m: [MethodInput!]!) { compare(runId: $id, methods: $m, iterations: [0]) { pairs { density { counts } } } }`,
    { id, m: methods },
  );
  expect(compare.pairs[0]!.density.counts.filter((c) => c > 0).length).toBeGreaterThan(500);
  const errorsBefore = browser.errors.length;
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Emulation.setCPUThrottlingRate', { rate: 20 });
  try {
    for (let round = 0; round < 3; round++) {
      await page.locator(`main a[href="/runs/${id}"]`).first().click();
      await page.getByRole('link', { name: 'Compare estimators' }).waitFor();
      await page.goBack();
      await density.waitFor();
    }
  } finally {
    await cdp.send('Emulation.setCPUThrottlingRate', { rate: 1 });
  }
  await page.locator(`main a[href="/runs/${id}"]`).first().click();
  await page.getByRole('link', { name: 'Compare estimators' }).waitFor();
  expect(browser.errors.slice(errorsBefore)).toEqual([]);
}, 300_000);

test('no console errors on any page', () => {
  expect(browser.errors).toEqual([]);
});
