import type { Capabilities } from './capabilities';
import { gql } from './graphql';
import type { Iteration, Job, MethodInput, Page, RunDetail, RunEvent, RunRow } from './types';

const RUN_ROW = 'id name project env method status lastIteration createdAt tags parentRunId';

export async function fetchRun(caps: Capabilities, id: string): Promise<RunDetail | null> {
  const children = caps.has('Run.children') ? `children { ${RUN_ROW} forkIteration config }` : '';
  const parent = caps.has('Run.parent') ? 'parent { id name method }' : '';
  const objectUrl = caps.has('Checkpoint.objectUrl') ? 'objectUrl' : '';
  const query = `query Run($id: ID!) {
    run(id: $id) {
      ${RUN_ROW} params config seed forkIteration finishedAt lastSeq summary
      iterations { index groupCount trajectoryCount stepCount metrics evaluationSuccessRate }
      checkpoints { iteration bytes sha256 format createdAt path ${objectUrl} }
      ${children} ${parent}
    }
  }`;
  return (await gql<{ run: RunDetail | null }>(query, { id })).run;
}

/**
 * The runs of `ids` the key sees, in that order, by one query (an alias each); ids that are no run's
 * (or no id) are left out.
 */
export async function fetchRunRows(ids: string[]): Promise<RunRow[]> {
  const wanted = ids.filter((id) => UUID.test(id));
  if (!wanted.length) return [];
  const fields = wanted.map((_, i) => `r${i}: run(id: $id${i}) { ${RUN_ROW} }`).join(' ');
  const params = wanted.map((_, i) => `$id${i}: ID!`).join(', ');
  const answer = await gql<Record<string, RunRow | null>>(
    `query Rows(${params}) { ${fields} }`,
    Object.fromEntries(wanted.map((id, i) => [`id${i}`, id])),
  );
  return wanted.flatMap((_, i) => answer[`r${i}`] ?? []);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The runs a page may overlay: any run the key sees, by name, or by id or the start of one (the
 * server filters by name only, so an id is looked up, and a prefix matched among the newest runs).
 */
export async function searchRuns(caps: Capabilities, text: string): Promise<RunRow[]> {
  const byName = caps.has('RunFilter.nameContains') && text;
  const query = `query Pick($filter: RunFilter) { runs(filter: $filter, first: 50) { nodes { ${RUN_ROW} } } }`;
  const list = async (filter: Record<string, unknown>) =>
    (await gql<{ runs: { nodes: RunRow[] } }>(query, { filter })).runs.nodes;
  const idLike = /^[0-9a-f-]{4,36}$/i.test(text);
  // By the start of an id: anywhere on servers that filter by it, else among the newest runs.
  const byPrefix = idLike && caps.has('RunFilter.idPrefix');
  const [named, byId, prefixed] = await Promise.all([
    list(byName ? { nameContains: text } : {}),
    UUID.test(text) ? fetchRunRows([text]) : Promise.resolve([]),
    byPrefix ? list({ idPrefix: text }) : idLike && byName ? list({}) : Promise.resolve([]),
  ]);
  const lower = text.toLowerCase();
  const hex = (id: string) => id.replace(/-/g, '').toLowerCase();
  const matching = [...byId, ...named, ...prefixed].filter(
    (r) => r.name.toLowerCase().includes(lower) || hex(r.id).startsWith(hex(text)),
  );
  return [...new Map(matching.map((r) => [r.id, r])).values()];
}

export interface MetricCurves {
  runId: string;
  runName: string;
  /** Metric name → [iteration, value] points. */
  series: Map<string, [number, number][]>;
}

/** Training success, held-out success and every logged metric, per iteration, for several runs. */
export async function fetchCurves(caps: Capabilities, runIds: string[]): Promise<MetricCurves[]> {
  if (caps.has('Query.metricSeries')) {
    const query = `query Series($ids: [ID!]!) { metricSeries(runIds: $ids) { runId runName series { name points { iteration value } } } }`;
    const answer = await gql<{
      metricSeries: {
        runId: string;
        runName: string;
        series: { name: string; points: { iteration: number; value: number }[] }[];
      }[];
    }>(query, { ids: runIds });
    return answer.metricSeries.map((r) => ({
      runId: r.runId,
      runName: r.runName,
      series: new Map(
        r.series.map((s) => [
          s.name,
          s.points.map((p) => [p.iteration, p.value] as [number, number]),
        ]),
      ),
    }));
  }
  const query = `query It($id: ID!) { run(id: $id) { id name iterations { index metrics evaluationSuccessRate } } }`;
  return Promise.all(
    runIds.map(async (id) => {
      const run = (
        await gql<{ run: { id: string; name: string; iterations: Iteration[] } | null }>(query, {
          id,
        })
      ).run;
      return {
        runId: id,
        runName: run?.name ?? id,
        series: curvesFromIterations(run?.iterations ?? []),
      };
    }),
  );
}

/** The same series from `Run.iterations` (servers without metricSeries). */
export function curvesFromIterations(
  iterations: Pick<Iteration, 'index' | 'metrics' | 'evaluationSuccessRate'>[],
): Map<string, [number, number][]> {
  const series = new Map<string, [number, number][]>();
  const add = (name: string, x: number, y: unknown) => {
    if (typeof y !== 'number' || !Number.isFinite(y)) return;
    if (!series.has(name)) series.set(name, []);
    series.get(name)!.push([x, y]);
  };
  for (const it of iterations) {
    for (const [name, value] of Object.entries(it.metrics ?? {})) add(name, it.index, value);
    add('evaluation.successRate', it.index, it.evaluationSuccessRate);
  }
  return series;
}

export async function fetchEvents(
  caps: Capabilities,
  runId: string,
  after: number | string | null,
  types: string[],
): Promise<Page<RunEvent>> {
  const typed = types.length > 0 && caps.hasType('EventType');
  const query = `query Events($id: ID!, $after: ${caps.hasType('EventType') ? 'String' : 'Int'}${typed ? ', $types: [EventType!]' : ''}) {
    run(id: $id) { events(first: 50, after: $after${typed ? ', types: $types' : ''}) {
      nodes { seq id type iteration recordedAt stepCount data } pageInfo { endCursor hasNextPage } } }
  }`;
  const cursor = after === null ? null : caps.hasType('EventType') ? String(after) : Number(after);
  const run = (
    await gql<{ run: { events: Page<RunEvent> } | null }>(query, {
      id: runId,
      after: cursor,
      ...(typed ? { types } : {}),
    })
  ).run;
  return run?.events ?? { nodes: [], pageInfo: { endCursor: null, hasNextPage: false } };
}

const JOB =
  'id runId advantageSetId status done total progress error iterations createdAt finishedAt';

/** The run's recompute jobs (`jobs(runId)`), else those this browser session started. */
export async function fetchJobs(caps: Capabilities, runId: string): Promise<Job[]> {
  if (caps.has('Query.jobs'))
    return (
      await gql<{ jobs: Job[] }>(`query Jobs($id: ID!) { jobs(runId: $id) { ${JOB} } }`, {
        id: runId,
      })
    ).jobs;
  const ids = startedJobs(runId);
  const jobs = await Promise.all(
    ids.map(
      async (id) =>
        (await gql<{ job: Job | null }>(`query Job($id: ID!) { job(id: $id) { ${JOB} } }`, { id }))
          .job,
    ),
  );
  return jobs.filter((j): j is Job => j !== null);
}

const startedKey = (runId: string) => `creditlab.jobs.${runId}`;
const startedJobs = (runId: string): string[] =>
  JSON.parse(sessionStorage.getItem(startedKey(runId)) ?? '[]') as string[];

export async function startRecompute(
  runId: string,
  method: MethodInput,
  iterations: number[] | null,
): Promise<Job> {
  const query = `mutation Recompute($runId: ID!, $method: MethodInput!, $iterations: [Int!]) { recompute(runId: $runId, method: $method, iterations: $iterations) { ${JOB} } }`;
  const job = (await gql<{ recompute: Job }>(query, { runId, method, iterations })).recompute;
  sessionStorage.setItem(
    startedKey(runId),
    JSON.stringify([...new Set([job.id, ...startedJobs(runId)])]),
  );
  return job;
}

export async function cancelJob(id: string): Promise<Job | null> {
  return (
    await gql<{ cancelJob: Job | null }>(
      `mutation Cancel($id: ID!) { cancelJob(id: $id) { ${JOB} } }`,
      { id },
    )
  ).cancelJob;
}

export async function fetchAdvantageSets(
  runId: string,
): Promise<
  { id: string; method: string; params: Record<string, unknown>; iterations: number[] }[]
> {
  const query = `query Sets($id: ID!) { run(id: $id) { advantageSets { id method params iterations } } }`;
  return (
    (
      await gql<{
        run: {
          advantageSets: {
            id: string;
            method: string;
            params: Record<string, unknown>;
            iterations: number[];
          }[];
        } | null;
      }>(query, { id: runId })
    ).run?.advantageSets ?? []
  );
}
