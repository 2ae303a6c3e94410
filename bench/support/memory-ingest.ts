import { rolloutEvents } from '@creditlab/client';
import { Readable } from 'node:stream';
import { syntheticBatchJson } from '../../libs/estimators/test/support/synthetic-rollouts';
import type { ServerProcess } from '../../test/support/test-server';
import { appendNdjson, createRun } from './concurrent-ingest';
import { scrapeMetrics } from './server-metrics';
import { postNdjsonStream } from './post-ndjson';
import { procStatusBytes } from './process-memory';
import { BENCH_ITERATION } from './synthetic-ingest';

/** The server's memory once `steps` steps were sent: peak and current resident, V8 heap in use. */
export interface MemorySample {
  steps: number;
  peakBytes: number;
  residentBytes: number;
  heapUsedBytes: number;
}

export interface MemoryResult {
  steps: number;
  bytes: number;
  requests: number;
  /** VmHWM once started. */
  startBytes: number;
  /** At about 10 %, 25 %, 50 % and all of the steps. */
  samples: MemorySample[];
}

/** The V8 heap in use (prom-client's default metric on /metrics). */
async function heapUsed(url: string): Promise<number> {
  return Number((await scrapeMetrics(url)).get('nodejs_heap_size_used_bytes'));
}

async function sample(server: ServerProcess, steps: number): Promise<MemorySample> {
  const pid = server.process.pid as number;
  return {
    steps,
    peakBytes: procStatusBytes(pid, 'VmHWM'),
    residentBytes: procStatusBytes(pid, 'VmRSS'),
    heapUsedBytes: await heapUsed(server.url),
  };
}

/** How the memory phase sends a run. */
export interface MemoryWay {
  /** One request per iteration, requests of up to `requestBytes`, or one request streamed. */
  requests: 'iteration' | 'batched' | 'stream';
  /** Steps as columns (the clients' default) rather than one object each. */
  columnar: boolean;
  requestBytes?: number;
}

/** A synthetic run's NDJSON, one iteration at a time, made as it is consumed. */
function* iterationBodies(
  totalSteps: number,
  seed: number,
  columnar: boolean,
): Generator<{ text: string; steps: number }> {
  for (let i = 0, steps = 0; steps < totalSteps; i++) {
    const batch = syntheticBatchJson(BENCH_ITERATION, seed + i);
    const n = batch.groups.reduce(
      (a, g) => a + g.trajectories.reduce((b, t) => b + t.steps.length, 0),
      0,
    );
    steps += n;
    yield {
      text: rolloutEvents(i, batch, 2000, { columnar })
        .map((e) => `${JSON.stringify(e)}\n`)
        .join(''),
      steps: n,
    };
  }
}

/**
 * `totalSteps` steps into one new run of a freshly started server, sent as `way` says; the server's
 * peak resident memory before and after (VmHWM covers its estimator threads too: they are threads
 * of the same process).
 */
export async function ingestMeasuringMemory(
  server: ServerProcess,
  totalSteps: number,
  way: MemoryWay,
): Promise<MemoryResult> {
  const pid = server.process.pid as number;
  const startBytes = procStatusBytes(pid, 'VmHWM');
  const runId = await createRun(server.url, `memory ${way.requests}`);
  const totals = { steps: 0, bytes: 0, requests: 0 };
  const samples: MemorySample[] = [];
  const marks = [0.1, 0.25, 0.5].map((f) => f * totalSteps);
  const seed = way.requests === 'stream' ? 700_000 : 500_000;
  const joined = way.requests === 'batched';
  // One iteration's body at a time. Samples are taken as the next body is made (the server has
  // read about all that came before), or with requests joined, as each is answered (bodies are
  // made well ahead of what was sent): then a sample may come after its mark (its steps say where).
  const counted = async function* () {
    for (const b of iterationBodies(totalSteps, seed, way.columnar)) {
      if (!joined && totals.steps >= (marks[0] ?? Infinity)) {
        marks.shift();
        samples.push(await sample(server, totals.steps));
      }
      totals.steps += b.steps;
      totals.bytes += Buffer.byteLength(b.text);
      yield b;
    }
  };
  if (way.requests === 'stream') {
    const texts = async function* () {
      for await (const b of counted()) yield b.text;
    };
    await postNdjsonStream(`${server.url}/v1/runs/${runId}/events`, Readable.from(texts()));
    totals.requests = 1;
  } else if (way.requests === 'iteration') {
    for await (const b of counted()) {
      await appendNdjson(server.url, runId, b.text);
      totals.requests++;
    }
  } else {
    // Iterations joined up to the limit, as the clients' senders join a backlog.
    const limit = way.requestBytes ?? 32 * 2 ** 20;
    let answered = 0;
    let pending: { text: string; steps: number }[] = [];
    let pendingBytes = 0;
    const send = async () => {
      await appendNdjson(server.url, runId, pending.map((b) => b.text).join(''));
      totals.requests++;
      answered += pending.reduce((n, b) => n + b.steps, 0);
      pending = [];
      pendingBytes = 0;
      while (answered >= (marks[0] ?? Infinity)) {
        const s = await sample(server, answered);
        for (; answered >= (marks[0] ?? Infinity); marks.shift()) samples.push(s);
      }
    };
    for await (const b of counted()) {
      const bytes = Buffer.byteLength(b.text);
      if (pending.length > 0 && pendingBytes + bytes > limit) await send();
      pending.push(b);
      pendingBytes += bytes;
    }
    if (pending.length > 0) await send();
  }
  samples.push(await sample(server, totals.steps));
  return {
    ...totals,
    startBytes,
    samples,
  };
}
