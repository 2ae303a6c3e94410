import { CreditlabClient, rolloutEvents } from '@creditlab/client';
import { Readable } from 'node:stream';
import { syntheticBatchJson } from '../../libs/estimators/test/support/synthetic-rollouts';
import type { ServerProcess } from '../../test/support/test-server';
import { appendNdjson, createRun } from './concurrent-ingest';
import { ADMIN_KEY } from '../../test/support/test-server';
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
  /**
   * One request per iteration, the client's background sender (requests of up to `requestBytes`,
   * as its backlog joins), or one request streamed.
   */
  requests: 'iteration' | 'sender' | 'stream';
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
  const joined = way.requests === 'sender';
  // One iteration's body at a time. Samples are taken as the next body is made (the server has
  // read about all that came before), or through the sender, once the request that holds the mark's
  // steps was answered (bodies are made well ahead of what is sent): then a sample may come after
  // its mark (its steps say where).
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
    // The TypeScript client's background sender, fed as fast as iterations are made (a backlog):
    // it joins what queued while its last request was out, up to its maxRequestBytes.
    const sender = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY }).sender(runId, {
      maxRequestBytes: way.requestBytes,
    });
    // Steps made once each count of events was logged: a request holds whole log calls.
    const logged: { events: number; steps: number }[] = [];
    const stored = () => logged.findLast((l) => l.events <= sender.stats.events)?.steps ?? 0;
    const sampleDue = async () => {
      for (let at = stored(); at >= (marks[0] ?? Infinity);) {
        const s = await sample(server, at);
        for (; at >= (marks[0] ?? Infinity); marks.shift()) samples.push(s);
      }
    };
    for await (const b of counted()) {
      await sender.logNdjson(b.text);
      logged.push({ events: sender.stats.logged, steps: totals.steps });
      await sampleDue();
    }
    // The rest is sent while the sender closes: its answers are looked for meanwhile.
    let closing = true;
    const closed = sender.close().finally(() => (closing = false));
    while (closing) {
      await sampleDue();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    totals.requests = (await closed).requests;
  }
  samples.push(await sample(server, totals.steps));
  return {
    ...totals,
    startBytes,
    samples,
  };
}
