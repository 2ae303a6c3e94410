import path from 'node:path';
import { Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import { invalidEvent, prepareEvent } from './append-session';
import type { EventOrigin } from './event-origin';
import type { BodyLine } from './ndjson-source';
import { notJson, notUtf8, parseLine } from './ndjson-source';
import {
  asBuffer,
  pendingEvent,
  prepareLine,
  type PendingEvent,
  type PreparedEvent,
  type PreparedLine,
} from './prepare-event';
import { packJobs, type PackingJob, type PackingOutcome } from '../advantages/in-hand-packing';
import type { PackedIteration } from '../advantages/packed-columns';

/** What the thread is asked: a piece of a body's lines to prepare, or iterations to pack. */
export type PrepareRequest =
  { id: number; from: 'client' | 'server'; lines: BodyLine[] } | { id: number; jobs: PackingJob[] };

/** Its answer: each line's prepared event, or each iteration packed. */
export type PrepareReply =
  { id: number; lines: PreparedLine[] } | { id: number; packed: PackingOutcome[] };

/**
 * Pieces of one body read ahead of the caller: sent to the thread, or prepared and waiting. Enough
 * that the thread goes on while this one projects and stores a whole chunk (16,000 steps in
 * append-session.ts; a piece, the lines one read of the socket ended, holds about 600 steps as
 * columns), few enough that a request is still read only as fast as it is stored (32 pieces of
 * 64 KiB: 2 MiB of body ahead).
 */
export const PIECES_AHEAD_IN_THREAD = 32;

/**
 * A second thread that parses and checks the lines of ingest bodies (JSON.parse, validation, the
 * log's body and digest: everything that depends on an event alone), so that the main thread,
 * which projects and writes them, does not: in the server's profile of a 1M-step ingest as columns
 * they were about a sixth of its busy time (1.4 of 8.8 s), and the garbage they leave is collected
 * on the thread's own heap. Answers come back in order of asking. Started on first use; a thread
 * that dies fails the requests it held (500) and is started again when asked.
 */
export class PrepareThread {
  private current: RunningThread | undefined;
  private nextId = 0;
  /** Why no thread can be started here, once that is known: lines are then prepared in this one. */
  private unavailable: string | undefined;

  constructor(
    private readonly options: {
      /** Told how many lines each piece sent to the thread holds (a metric). */
      sent?: (lines: number) => void;
      /** Told once if no thread can be started (this module stays free of Nest). */
      warn?: (message: string) => void;
      /** The thread's code (tests: one that cannot load); by default prepare-thread-entry. */
      entry?: string;
    } = {},
  ) {}

  /** The lines' prepared events (or why each is refused), in the order given. */
  prepare(lines: BodyLine[], from: 'client' | 'server'): Promise<PreparedLine[]> {
    this.options.sent?.(lines.length);
    return this.ask<PreparedLine[]>({ from, lines }, () => prepareHere(lines, from));
  }

  /**
   * The iterations packed from their kept rows (in-hand-packing.ts), in the order given: off the
   * request's thread, where packing was a sixth of the busy time of a columnar ingest.
   */
  pack(jobs: PackingJob[]): Promise<PackingOutcome[]> {
    // The rows' buffers are moved to the thread, not copied: the caller lets go of them.
    const moved = jobs.map((j) => j.bytes.buffer as ArrayBuffer);
    return this.ask<PackingOutcome[]>({ jobs }, () => packJobs(jobs), moved);
  }

  /** Sends the thread a task; `here` does it in this thread when no thread can run. */
  private ask<T>(
    task: DistributiveOmit<PrepareRequest, 'id'>,
    here: () => T,
    moved: ArrayBuffer[] = [],
  ): Promise<T> {
    const thread = this.current ?? this.start();
    if (!thread) return Promise.resolve(here());
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      thread.waiting.set(id, { resolve: resolve as (value: unknown) => void, reject, here });
      thread.worker.postMessage({ id, ...task } as PrepareRequest, moved);
    });
  }

  async close(): Promise<void> {
    const thread = this.current;
    this.current = undefined;
    await thread?.worker.terminate();
  }

  private start(): RunningThread | undefined {
    if (this.unavailable) return undefined;
    let worker: Worker;
    try {
      worker = new Worker(this.options.entry ?? ENTRY, { execArgv: entryExecArgv() });
    } catch (e) {
      this.giveUp((e as Error).message);
      return undefined;
    }
    worker.unref(); // the requests it serves keep the process up, not the thread
    const thread: RunningThread = { worker, waiting: new Map(), answered: false };
    worker.on('message', (reply: PrepareReply) => {
      thread.answered = true;
      const waiter = thread.waiting.get(reply.id);
      thread.waiting.delete(reply.id);
      waiter?.resolve(
        'lines' in reply ? reply.lines.map(withBuffers) : reply.packed.map(packedWithBuffers),
      );
    });
    const lost = (reason: string, loadFailure: boolean) => {
      if (this.current === thread) this.current = undefined;
      // A thread whose code fails before it answers anything (a build without its entry) will
      // fail the same way every time: this thread prepares instead, what was sent included.
      if (loadFailure) this.giveUp(reason);
      const error = new Error(`the ingest's preparing thread ${reason}`);
      for (const waiter of thread.waiting.values())
        if (loadFailure) waiter.resolve(waiter.here());
        else waiter.reject(error);
      thread.waiting.clear();
    };
    worker.on('error', (e: Error & { code?: string }) =>
      lost(`failed: ${e.message}`, !thread.answered && e.code !== 'ERR_WORKER_OUT_OF_MEMORY'),
    );
    worker.on('exit', (code) => lost(`exited (code ${code})`, false));
    this.current = thread;
    return thread;
  }

  private giveUp(reason: string): void {
    this.unavailable = reason;
    this.options.warn?.(
      `the ingest's preparing thread cannot start (${reason}); bodies are parsed and checked on the request's thread`,
    );
  }
}

/** A started thread and the pieces it has not answered yet. */
interface RunningThread {
  worker: Worker;
  waiting: Map<
    number,
    {
      resolve: (value: unknown) => void;
      reject: (e: Error) => void;
      /** The task done in this thread instead (a thread that cannot load). */
      here: () => unknown;
    }
  >;
  /** Whether it has answered once (its code loaded and ran). */
  answered: boolean;
}

const prepareHere = (lines: BodyLine[], from: 'client' | 'server') =>
  lines.map((l) => prepareLine(l.position, l.text, from));

/**
 * A body's events, each as a function that gives it or throws why it is refused: called once the
 * run is known, so that a missing run is reported before a bad event, as when events are checked
 * in the request's own thread. The first event is checked here, when the caller asks for it: it is
 * waited for either way, and a body of one event (a trainer's iteration) then never pays the
 * hand-off (about 1 µs per step here, the copies to the thread and back, for no overlap); the
 * events after it on the thread. A line that is not UTF-8 or not JSON is refused where it is met,
 * as ndjsonEvents does. Stops reading the body when the caller stops.
 */
export async function* preparedInThread(
  thread: PrepareThread,
  pieces: AsyncIterable<BodyLine[]>,
  from: 'client' | 'server',
  origin: EventOrigin,
): AsyncGenerator<PendingEvent> {
  const body = pieces[Symbol.asyncIterator]();
  let prepared: Readable | undefined;
  try {
    let first = await body.next();
    while (!first.done && first.value.length === 0) first = await body.next();
    if (first.done) return;
    const [head, ...others] = first.value as [BodyLine, ...BodyLine[]];
    const value = parseLine(head.position, head.text);
    // Readable.map keeps the order and holds at most `concurrency` pieces in the thread; read(0)
    // starts it now, so that the thread works on the next lines while the first event is stored.
    prepared = Readable.from(theRest(others, body), { highWaterMark: 1 }).map(
      (lines: BodyLine[]) => thread.prepare(lines, from),
      // Half sent; map holds about as many answered pieces again while they wait.
      { concurrency: PIECES_AHEAD_IN_THREAD / 2 },
    );
    // Failures (the body's, the thread's) are read by the loop below, in their turn; without a
    // listener one met while the first event is stored would be thrown at the process.
    prepared.on('error', () => undefined);
    prepared.read(0);
    yield pendingEvent(() => prepareEvent({ position: head.position, value }, from, origin), value);
    for await (const lines of prepared as AsyncIterable<PreparedLine[]>)
      for (const line of lines) {
        if ('notUtf8' in line) throw notUtf8(line.position);
        if ('notJson' in line) throw notJson(line.position, line.notJson);
        yield () => preparedOrThrow(line, origin);
      }
  } finally {
    prepared?.destroy();
    // Not awaited: a body waiting for bytes ends when they come or its idle limit passes.
    void body.return?.().catch(() => undefined);
  }
}

/** The body's pieces after its first line. */
async function* theRest(
  others: BodyLine[],
  body: AsyncIterator<BodyLine[]>,
): AsyncGenerator<BodyLine[]> {
  if (others.length > 0) yield others;
  for (let next = await body.next(); !next.done; next = await body.next()) yield next.value;
}

function preparedOrThrow(
  line: Exclude<PreparedLine, { notUtf8: true } | { notJson: string }>,
  origin: EventOrigin,
): PreparedEvent {
  if ('failed' in line)
    throw new Error(`preparing ${origin.name(line.position)} failed: ${line.failed}`);
  if ('reason' in line) invalidEvent(origin, line.position, line.path, line.reason);
  return line;
}

/** A Buffer sent between threads arrives as a plain Uint8Array. */
function withBuffers(line: PreparedLine): PreparedLine {
  if (!('hash' in line)) return line;
  return { ...line, hash: asBuffer(line.hash), body: line.body && asBuffer(line.body) };
}

/** The same for a packed iteration's columns. */
function packedWithBuffers(outcome: PackingOutcome): PackingOutcome {
  if ('failed' in outcome) return outcome;
  const columns = Object.fromEntries(
    Object.entries(outcome.columns).map(([name, bytes]) => [name, asBuffer(bytes)]),
  ) as PackedIteration['columns'];
  return { ...outcome, columns };
}

/** Omit over each member of a union (the built-in one merges them). */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/**
 * The thread's entry beside this file: compiled (.js) in a build, else the TypeScript source, which
 * the thread compiles on the fly as this process does (the tests' servers, CREDITLAB_COMPILED=0).
 */
const ENTRY = path.join(__dirname, `prepare-thread-entry${path.extname(__filename)}`);

/**
 * The thread's Node options: its parent's (the default), which it may not be given explicitly when
 * they hold V8 or process-wide flags (`--max-old-space-size`: the Worker refuses them), or, from
 * source in a process that registered the compiler itself (run-entry.mjs), that compiler alone.
 */
function entryExecArgv(): string[] | undefined {
  const registered = process.execArgv.some((a) => a.includes('@swc-node/register'));
  return ENTRY.endsWith('.ts') && !registered ? ['-r', '@swc-node/register'] : undefined;
}
