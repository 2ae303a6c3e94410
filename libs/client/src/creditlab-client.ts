import { randomUUID } from 'node:crypto';
import type { ClientEvent, RunInput } from '@creditlab/events';
import { Kind, parse } from 'graphql';
import {
  CreditlabApiError,
  CreditlabGraphQLError,
  retryable,
  type GraphQLErrorItem,
} from './client-errors';
import { EventSender, type EventSenderOptions } from './event-sender';
import { ndjsonBody } from './ndjson-lines';
import { refusalWithAdvice } from './refusal-advice';
import { resolveConnection } from '@creditlab/credentials';

export interface ClientOptions {
  /** Server base URL, e.g. http://127.0.0.1:4000 */
  url: string;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** Events per NDJSON request when appending (a request is all-or-nothing). */
  batchSize?: number;
  /**
   * Retries per request. An idempotent request (appends, by their event ids; createRun, by the run
   * id the client chooses; online advantages, by their event id; checkpoint uploads; GraphQL
   * queries) is retried on network errors, 5xx answers (but 503 STATEMENT_TIMEOUT, which would run
   * as long again) and 429; any other (GraphQL mutations, unless told) only when the server
   * certainly did not act on it: 429 (refused before any route) or a refused connection.
   */
  retries?: number;
  /** First retry delay; doubles each attempt, with jitter. */
  retryDelayMs?: number;
  fetch?: typeof fetch;
}

/** What `exportRun` exports: every iteration and no advantages unless said. */
export interface ExportOptions {
  format?: 'csv' | 'parquet';
  iterations?: number[];
  methods?: { name: string; params?: Record<string, unknown> }[];
  /** Large columns, only when named. */
  include?: ('embedding' | 'tokenLogprobs')[];
}

export interface AppendProgress {
  sent: number;
  accepted: number;
  duplicates: number;
  lastSeq: number;
}

/** The server's answer to one append request, and how many times the client retried it. */
export interface AppendAnswer {
  accepted: number;
  duplicates: number;
  lastSeq: number;
  retries: number;
}

export interface AppendSummary extends AppendProgress {
  requests: number;
  retries: number;
}

/** A stored checkpoint, as the server describes it. */
export interface StoredCheckpoint {
  iteration: number;
  format: string;
  /** SHA-256 of its bytes, hex. */
  sha256: string;
  bytes: number;
  createdAt: string;
  /** Where to GET it on the server. */
  path: string;
  /** The object holding its bytes (s3://bucket/key) when the server keeps them in a bucket; else null. */
  objectUrl: string | null;
}

/** A stored checkpoint and where its bytes may be fetched from the bucket itself, with no key. */
export interface CheckpointDownloadUrl extends StoredCheckpoint {
  /** A presigned URL of the object, valid until `expiresAt`; null when the bytes are in the database. */
  url: string | null;
  expiresAt: string | null;
}

/**
 * Creditlab's HTTP client for trainers: creates runs and streams events as
 * NDJSON in batches, retrying network failures and 5xx answers with
 * exponential backoff. Retries cannot duplicate anything, because every event
 * carries its id and the server stores an id once.
 */
export class CreditlabClient {
  private readonly batchSize: number;
  private readonly retries: number;
  private readonly retryDelayMs: number;
  private readonly fetch: typeof fetch;
  /** Each run's open sender. */
  private readonly senders = new Map<string, EventSender>();

  constructor(private readonly options: ClientOptions) {
    this.batchSize = options.batchSize ?? 500;
    this.retries = options.retries ?? 5;
    this.retryDelayMs = options.retryDelayMs ?? 200;
    this.fetch = options.fetch ?? fetch;
  }

  /**
   * A client for the server and key given, else CREDITLAB_URL / CREDITLAB_API_KEY, else the
   * credentials file the embedded server wrote on its first start.
   */
  static connect(
    given: { url?: string; apiKey?: string } = {},
    options: Omit<ClientOptions, 'url' | 'apiKey'> = {},
  ): CreditlabClient {
    return new CreditlabClient({ ...options, ...resolveConnection(given) });
  }

  get url(): string {
    return this.options.url;
  }

  private headers(contentType?: string, accept = 'application/json'): Record<string, string> {
    return {
      ...(contentType ? { 'content-type': contentType } : {}),
      accept,
      ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
    };
  }

  /**
   * Creates a run under an id the client chooses (`input.id`, else a fresh UUID), so that a retry of
   * a request whose answer was lost returns the same run instead of making a second one.
   */
  async createRun(input: RunInput): Promise<{ id: string }> {
    const body = JSON.stringify({ ...input, id: input.id ?? randomUUID() });
    const { res } = await this.send('/v1/runs', {
      method: 'POST',
      contentType: 'application/json',
      body,
      idempotent: true,
    });
    return (await res.json()) as { id: string };
  }

  /**
   * Appends events in order, `batchSize` per request. Each request is
   * atomic on the server; `onProgress` is called after each one.
   */
  async appendEvents(
    runId: string,
    events: Iterable<ClientEvent> | AsyncIterable<ClientEvent>,
    onProgress?: (p: AppendProgress) => void,
  ): Promise<AppendSummary> {
    const total: AppendSummary = {
      sent: 0,
      accepted: 0,
      duplicates: 0,
      lastSeq: 0,
      requests: 0,
      retries: 0,
    };
    let batch: ClientEvent[] = [];
    const send = async () => {
      if (batch.length === 0) return;
      const lines = batch.map((e) => Buffer.from(JSON.stringify(e)));
      const r = await this.postEvents(runId, lines, { eventsBefore: total.sent });
      total.sent += batch.length;
      total.accepted += r.accepted;
      total.duplicates += r.duplicates;
      total.lastSeq = r.lastSeq;
      total.requests++;
      total.retries += r.retries;
      batch = [];
      onProgress?.({
        sent: total.sent,
        accepted: total.accepted,
        duplicates: total.duplicates,
        lastSeq: total.lastSeq,
      });
    };
    for await (const event of events) {
      batch.push(event);
      if (batch.length >= this.batchSize) await send();
    }
    await send();
    return total;
  }

  /**
   * One append request of events already encoded, one JSON event per line (all-or-nothing on the
   * server), retried like every append: the server stores each event id once, so a retried request
   * adds nothing twice. A refusal of a line names the event on it (see refusalWithAdvice).
   */
  async postEvents(
    runId: string,
    lines: readonly Uint8Array[],
    options: {
      /** How many of the caller's events came before these: a refusal then names the event's place. */
      eventsBefore?: number;
      /** Ends the request and its retries. */
      signal?: AbortSignal;
    } = {},
  ): Promise<AppendAnswer> {
    const { res, retries } = await this.send(`/v1/runs/${encodeURIComponent(runId)}/events`, {
      method: 'POST',
      contentType: 'application/x-ndjson',
      body: ndjsonBody(lines),
      idempotent: true,
      signal: options.signal,
    }).catch((e: unknown) => {
      throw refusalWithAdvice(e, lines, options.eventsBefore);
    });
    return { ...((await res.json()) as Omit<AppendAnswer, 'retries'>), retries };
  }

  /**
   * The background sender of `runId`'s events: `log` queues and returns, and what has queued while
   * the last request was out goes in the next one (up to `maxRequestBytes`), in the order logged. For
   * a trainer that should not wait on the server at each iteration; see EventSender. The same sender
   * is returned for the run until it is closed or stopped (`options` apply when it is made), so
   * that two parts of a program logging to one run keep one order.
   */
  sender(runId: string, options: EventSenderOptions = {}): EventSender {
    const open = this.senders.get(runId);
    if (open) return open;
    const made: EventSender = new EventSender(
      (lines, options) => this.postEvents(runId, lines, options),
      runId,
      options,
      () => {
        if (this.senders.get(runId) === made) this.senders.delete(runId);
      },
    );
    this.senders.set(runId, made);
    return made;
  }

  /**
   * The online path: advantages of `iteration` under `method`, as float32 in canonical step order
   * (group, trajectory, step). Records an `advantages.used` event; `eventId` makes a retry record it once.
   */
  async advantages(
    runId: string,
    iteration: number,
    method: string,
    params: Record<string, unknown> = {},
    eventId: string = newEventId(),
  ): Promise<{ advantages: Float32Array; advantageSetId: string }> {
    const { res } = await this.send(
      `/v1/runs/${encodeURIComponent(runId)}/iterations/${iteration}/advantages`,
      {
        method: 'POST',
        contentType: 'application/json',
        accept: 'application/octet-stream',
        body: JSON.stringify({ method, params, eventId }),
        idempotent: true, // the advantages.used event is recorded once per eventId
      },
    );
    const bytes = new Uint8Array(await res.arrayBuffer());
    return {
      advantages: new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4),
      advantageSetId: res.headers.get('x-creditlab-advantage-set') ?? '',
    };
  }

  /**
   * Uploads checkpoint `iteration` (the weights after that many iterations of training). The server
   * records a `checkpoint.saved` event; uploading the same bytes again is harmless.
   */
  async uploadCheckpoint(
    runId: string,
    iteration: number,
    data: Uint8Array,
    format: string,
  ): Promise<StoredCheckpoint> {
    const { res } = await this.send(
      `/v1/runs/${encodeURIComponent(runId)}/checkpoints/${iteration}`,
      {
        method: 'PUT',
        contentType: 'application/octet-stream',
        body: data,
        headers: { 'x-creditlab-checkpoint-format': format },
        idempotent: true, // the same bytes again are acknowledged; other bytes are refused (409)
      },
    );
    return (await res.json()) as StoredCheckpoint;
  }

  /**
   * Where checkpoint `iteration`'s bytes may be downloaded from the server's bucket directly (a
   * presigned URL: whoever holds it needs no key until it expires), with the checkpoint's facts;
   * `url` is null when the server keeps the bytes in its database.
   */
  async checkpointUrl(runId: string, iteration: number): Promise<CheckpointDownloadUrl> {
    const { res } = await this.send(
      `/v1/runs/${encodeURIComponent(runId)}/checkpoints/${iteration}/url`,
      { method: 'GET', idempotent: true },
    );
    return (await res.json()) as CheckpointDownloadUrl;
  }

  /**
   * Checkpoint `iteration`'s bytes, checked against the SHA-256 the server recorded. When they are
   * in a bucket they are fetched from it directly (so that many trainers fetching a large checkpoint
   * do not all go through the server), and through the server if that fails (a bucket this machine
   * cannot reach, say); `viaServer` always goes through the server.
   */
  async downloadCheckpoint(
    runId: string,
    iteration: number,
    options: { viaServer?: boolean } = {},
  ): Promise<{ data: Uint8Array; format: string; sha256: string }> {
    const direct = options.viaServer ? undefined : await this.directCheckpoint(runId, iteration);
    const { data, format, sha256 } = direct ?? (await this.checkpointFromServer(runId, iteration));
    // A download the server had to cut short (its store failing mid-way) would fail the read;
    // the digest also catches bytes changed where they are stored.
    const got = Buffer.from(await crypto.subtle.digest('SHA-256', data)).toString('hex');
    if (sha256 && got !== sha256)
      throw new Error(
        `checkpoint ${iteration} of run ${runId}: the downloaded bytes' SHA-256 is ${got}, the server recorded ${sha256}`,
      );
    return { data, format, sha256 };
  }

  /** The bytes from the bucket's presigned URL, or undefined when there is none or it fails. */
  private async directCheckpoint(
    runId: string,
    iteration: number,
  ): Promise<{ data: Uint8Array; format: string; sha256: string } | undefined> {
    let link: CheckpointDownloadUrl;
    try {
      link = await this.checkpointUrl(runId, iteration);
    } catch (e) {
      // A server older than the route, or no such checkpoint: the server's download says which.
      if (e instanceof CreditlabApiError && e.status === 404) return undefined;
      throw e;
    }
    if (link.url === null) return undefined;
    try {
      // No key goes with it: the URL is its own authority, and the key is not the bucket's to see.
      const res = await this.fetch(link.url, { method: 'GET' });
      if (!res.ok) {
        await res.body?.cancel(); // else its connection stays taken until the answer is collected
        return undefined;
      }
      return {
        data: new Uint8Array(await res.arrayBuffer()),
        format: link.format,
        sha256: link.sha256,
      };
    } catch {
      return undefined;
    }
  }

  private async checkpointFromServer(
    runId: string,
    iteration: number,
  ): Promise<{ data: Uint8Array; format: string; sha256: string }> {
    const { res } = await this.send(
      `/v1/runs/${encodeURIComponent(runId)}/checkpoints/${iteration}`,
      {
        method: 'GET',
        accept: 'application/octet-stream',
        idempotent: true,
      },
    );
    return {
      data: new Uint8Array(await res.arrayBuffer()),
      format: res.headers.get('x-creditlab-checkpoint-format') ?? '',
      sha256: res.headers.get('x-creditlab-sha256') ?? '',
    };
  }

  /**
   * A run's steps with the advantages of `options.methods` (names and parameters), as the server
   * streams them (`GET /v1/runs/{id}/export`): read the stream to keep memory flat on large runs.
   * Embeddings and token log-probs come only when `include` names them.
   */
  async exportRun(runId: string, options: ExportOptions = {}): Promise<ReadableStream<Uint8Array>> {
    const format = options.format ?? 'csv';
    const query = new URLSearchParams({ format });
    if (options.iterations) query.set('iterations', options.iterations.join(','));
    if (options.methods) query.set('methods', JSON.stringify(options.methods));
    if (options.include?.length) query.set('include', options.include.join(','));
    const { res } = await this.send(`/v1/runs/${encodeURIComponent(runId)}/export?${query}`, {
      method: 'GET',
      accept: format === 'csv' ? 'text/csv' : 'application/vnd.apache.parquet',
      idempotent: true,
    });
    if (!res.body) throw new Error(`export of run ${runId}: the response has no body`);
    return res.body;
  }

  /**
   * POSTs a GraphQL operation; GraphQL errors are thrown with their messages. Queries are retried;
   * mutations are not, unless `idempotent` says that repeating this one is harmless.
   */
  async graphql<T>(
    query: string,
    variables: Record<string, unknown> = {},
    options: { idempotent?: boolean } = {},
  ): Promise<T> {
    const { res } = await this.send('/graphql', {
      method: 'POST',
      contentType: 'application/json',
      body: JSON.stringify({ query, variables }),
      idempotent: options.idempotent ?? onlyQueries(query),
    });
    const answer = (await res.json()) as { data?: T; errors?: GraphQLErrorItem[] };
    if (answer.errors?.length) throw new CreditlabGraphQLError(answer.errors);
    return answer.data as T;
  }

  /**
   * One request, retried as `init.idempotent` allows (see `ClientOptions.retries`); resolves with
   * the successful answer, throws CreditlabApiError with the server's JSON body for any other status.
   */
  private async send(
    path: string,
    init: {
      method: string;
      contentType?: string;
      accept?: string;
      body?: string | Uint8Array;
      headers?: Record<string, string>;
      /** Whether sending it twice has the effect of sending it once: every call says so. */
      idempotent: boolean;
      /** Ends the request and its retries (the fetch, or the wait before the next attempt). */
      signal?: AbortSignal;
    },
  ): Promise<{ res: Response; retries: number }> {
    const { signal } = init;
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await this.fetch(new URL(path, this.options.url), {
          method: init.method,
          headers: { ...this.headers(init.contentType, init.accept), ...init.headers },
          body: init.body,
          signal,
        });
      } catch (e) {
        if (signal?.aborted) throw e;
        if (attempt >= this.retries || !(init.idempotent || connectionRefused(e))) throw e;
        await this.backoff(attempt, undefined, signal);
        continue;
      }
      if (res.ok) return { res, retries: attempt };
      const body = errorBody(await res.text());
      if (!retryable(res.status, body, init.idempotent) || attempt >= this.retries)
        throw new CreditlabApiError(res.status, body);
      await this.backoff(attempt, res, signal);
    }
  }

  /** The wait before attempt `attempt + 1`; rejects at once with the signal's reason once it aborts. */
  private backoff(attempt: number, res?: Response, signal?: AbortSignal): Promise<void> {
    const retryAfter = Number(res?.headers.get('retry-after'));
    const delay =
      retryAfter > 0 ? retryAfter * 1000 : this.retryDelayMs * 2 ** attempt * (0.5 + Math.random());
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const aborted = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', aborted);
        resolve();
      }, delay);
      signal?.addEventListener('abort', aborted, { once: true });
    });
  }
}

/** An error answer's JSON body, or its text as the message. */
function errorBody(text: string): Record<string, unknown> {
  if (!text) return {};
  try {
    const body: unknown = JSON.parse(text);
    if (body !== null && typeof body === 'object' && !Array.isArray(body))
      return body as Record<string, unknown>;
  } catch {
    // not JSON: a proxy's page, say
  }
  return { message: text };
}

/** Nothing listened: the request never reached a server. */
const connectionRefused = (e: unknown): boolean =>
  (e as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED';

/** Whether a GraphQL document holds only queries (what a retry cannot repeat the effect of). */
function onlyQueries(document: string): boolean {
  try {
    return parse(document).definitions.every(
      (d) => d.kind !== Kind.OPERATION_DEFINITION || d.operation === 'query',
    );
  } catch {
    return false; // the server will say what is wrong with it, once
  }
}

/** A fresh event id (UUID v4). */
export const newEventId = (): string => randomUUID();
