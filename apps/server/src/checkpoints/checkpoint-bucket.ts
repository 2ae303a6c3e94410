import type { GetObjectCommandOutput, S3Client } from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { BUCKET_PART_BYTES, BucketUpload, type BucketUploadLog } from './bucket-upload';

export type Sdk = typeof import('@aws-sdk/client-s3');

/** The largest checkpoint a bucket takes here: S3's 10,000 parts of BUCKET_PART_BYTES, less a margin. */
export const MAX_BUCKET_CHECKPOINT_BYTES = 8192 * BUCKET_PART_BYTES; // 64 GiB

/** Where checkpoints go when a bucket is set: `s3://bucket/prefix/`. */
export interface BucketAddress {
  bucket: string;
  /** Put before every key; empty or ending in `/`. */
  prefix: string;
}

/** `s3://bucket` or `s3://bucket/some/prefix`, as CREDITLAB_CHECKPOINT_BUCKET names it. */
export function parseBucketUrl(url: string): BucketAddress {
  const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(url);
  if (!m)
    throw new Error(
      `expected s3://bucket or s3://bucket/prefix (a bucket name is 3-63 of a-z, 0-9, . and -), got ${JSON.stringify(url)}`,
    );
  const rest = (m[2] ?? '').replace(/^\/+|\/+$/g, '');
  return { bucket: m[1] as string, prefix: rest === '' ? '' : `${rest}/` };
}

/** An object URL stored in a checkpoint row, split into bucket and key. */
export function parseObjectUrl(url: string): { bucket: string; key: string } {
  const m = /^s3:\/\/([^/]+)\/(.+)$/.exec(url);
  if (!m) throw new Error(`not an object URL: ${url}`);
  return { bucket: m[1] as string, key: m[2] as string };
}

/** What a store's answer of this status means when it comes without a body (HEAD has none). */
const BARE_STATUS: Record<number, string> = {
  301: 'the bucket is in another region (AWS_REGION)',
  400: 'the store refused the request',
  403: 'access denied: the credentials may not use it',
  404: 'no such bucket',
};

/**
 * An error from the store or the connection: its code (the store's, or the socket's such as
 * ECONNREFUSED), the store's HTTP status if it answered, and its message. `bare` when the store
 * answered without a body to name the error (HEAD has none).
 */
function errorFields(error: unknown) {
  const e = error as {
    name?: string;
    Code?: string;
    code?: string;
    message?: string;
    $metadata?: { httpStatusCode?: number };
  };
  const status = e?.$metadata?.httpStatusCode;
  const code = e?.Code ?? e?.code ?? e?.name ?? 'error';
  // The SDK names such an error by its status ("NotFound", "Forbidden") or "Unknown", and its
  // message is "UnknownError" or the name again.
  const bare =
    status !== undefined &&
    (/^Unknown/.test(code) || e?.message === 'UnknownError' || e?.message === code);
  return { code, status, message: e?.message, bare };
}

/** The store's error code and message, or the connection's error: for the operator, in the log. */
export function describeS3Error(error: unknown): string {
  const { code, status, message, bare } = errorFields(error);
  if (bare)
    return `HTTP ${status}${BARE_STATUS[status as number] ? `, ${BARE_STATUS[status as number]}` : ''}`;
  const said = message && message !== code ? `: ${message}` : '';
  return `${code}${said}${status !== undefined ? ` (HTTP ${status})` : ''}`;
}

/**
 * The store's error code and HTTP status only: what a caller is told. The store's message can name
 * the account, a role or internal hosts, which are the operator's (describeS3Error, logged).
 */
export function shortS3Error(error: unknown): string {
  const { code, status, bare } = errorFields(error);
  if (status === undefined) return code;
  return bare ? `HTTP ${status}` : `${code}, HTTP ${status}`;
}

/** The error a request to the store gets when it has no answer in time. */
class StoreTimeout extends Error {
  override name = 'Timeout';
}

const isMissingObject = (error: unknown) => {
  const name = (error as { name?: string })?.name;
  return name === 'NoSuchKey' || name === 'NotFound';
};

/**
 * Checkpoints kept as objects in an S3-compatible bucket, one object per upload under
 * `<prefix>runs/<run>/checkpoints/<k>/<upload>`. The database keeps each checkpoint's row (with the
 * object's URL), its event and everything else; this class only moves bytes.
 */
export class CheckpointBucket {
  private constructor(
    readonly sdk: Sdk,
    readonly s3: S3Client,
    readonly at: BucketAddress,
    /** The longest one request to the store may go without its answer. */
    private readonly timeoutMs: number,
    /** Where the store's own words go (the log): callers get its code and status only. */
    private readonly log: (message: string) => void,
    /** Signs download URLs: `s3`, or a client of the endpoint clients reach the bucket at. */
    private readonly signer: S3Client,
    private readonly downloadUrlSeconds: number,
  ) {}

  /**
   * The bucket `url` names. Endpoint, region and credentials come from the AWS SDK's own settings
   * (AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, AWS_REGION, the credential chain: keys, a profile,
   * an instance role), so that a lab's usual AWS set-up works unchanged; `pathStyle` names the
   * bucket in the path rather than the host, as MinIO and most other stores want.
   */
  static async open(
    url: string,
    options: {
      pathStyle: boolean;
      timeoutMs: number;
      /** Connections to the store at most: more than the uploads and downloads a process allows. */
      maxConnections: number;
      log: (message: string) => void;
      /** Presigned download URLs: how long they last, and the endpoint they name if not the server's. */
      downloadUrls?: { seconds: number; endpoint?: string };
      env?: NodeJS.ProcessEnv;
    },
  ): Promise<CheckpointBucket> {
    const env = options.env ?? process.env;
    // Loaded only when a bucket is set: the SDK is large, and a server without one need not pay for it.
    const sdk = await import('@aws-sdk/client-s3');
    const common = {
      forcePathStyle: options.pathStyle,
      // The SDK's own region lookup ends in an error at the first request; a store other than AWS
      // rarely cares which region it is asked in.
      region: env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
      // Checksums the store does not ask for are not sent: several S3-compatible stores refuse the
      // SDK's newer default ones. A checkpoint is held to the SHA-256 taken as it arrives.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    } as const;
    const s3 = new sdk.S3Client({
      ...common,
      // Each request also has `timeoutMs` for its answer (send); the handler's own request timeout
      // only logs unless told to throw, and would cut a download that a slow client reads for long.
      // The SDK's default of 50 connections would let 50 slow downloads hold them all, and every
      // other request then wait for one; the process caps its uploads and downloads below this.
      requestHandler: {
        connectionTimeout: 5_000,
        httpAgent: { keepAlive: true, maxSockets: options.maxConnections },
        httpsAgent: { keepAlive: true, maxSockets: options.maxConnections },
      },
    });
    // A URL is signed for the host it names: where the server reaches the store at a private
    // address (a compose network's `minio:9000`), clients are given the address they reach it at.
    const urlEndpoint = options.downloadUrls?.endpoint;
    const signer = urlEndpoint ? new sdk.S3Client({ ...common, endpoint: urlEndpoint }) : s3;
    return new CheckpointBucket(
      sdk,
      s3,
      parseBucketUrl(url),
      options.timeoutMs,
      options.log,
      signer,
      options.downloadUrls?.seconds ?? 900,
    );
  }

  /**
   * A presigned GET of a stored checkpoint's object: whoever holds the URL may download the object,
   * with no key of Creditlab's, until it expires (or the server's credentials do, if they are
   * temporary ones). Signed here with no request to the store.
   */
  async downloadUrl(
    objectUrl: string,
    /** Have the store answer as a file of this name (a browser saves it so); a plain name. */
    filename?: string,
  ): Promise<{ url: string; expiresAt: Date }> {
    const { bucket, key } = parseObjectUrl(objectUrl);
    const { getSignedUrl } = await import('@aws-sdk/s3-request-presigner');
    const signedAt = Date.now();
    try {
      const url = await getSignedUrl(
        this.signer,
        new this.sdk.GetObjectCommand({
          Bucket: bucket,
          Key: key,
          ResponseContentDisposition:
            filename === undefined ? undefined : `attachment; filename="${filename}"`,
        }),
        { expiresIn: this.downloadUrlSeconds },
      );
      // Signed with temporary credentials (an instance role's, STS), the URL stops working when they
      // expire, whatever it says: the answer says the earlier of the two.
      const { expiration } = await this.signer.config.credentials();
      const expires = signedAt + this.downloadUrlSeconds * 1000;
      return { url, expiresAt: new Date(Math.min(expires, expiration?.getTime() ?? expires)) };
    } catch (e) {
      // No credentials to sign with (an instance role that did not answer, say).
      throw this.unavailable(e, `s3://${bucket}`);
    }
  }

  /**
   * The origin (scheme, host, port) download URLs name, learnt by signing one: the web app's page
   * lets frames from it (its Content-Security-Policy), where it starts bucket downloads.
   */
  async downloadOrigin(): Promise<string> {
    return new URL((await this.downloadUrl(`s3://${this.at.bucket}/${this.at.prefix}origin`)).url)
      .origin;
  }

  /** Lets the clients' connections go. */
  destroy(): void {
    this.s3.destroy();
    if (this.signer !== this.s3) this.signer.destroy();
  }

  get url(): string {
    return `s3://${this.at.bucket}/${this.at.prefix}`;
  }

  /**
   * Sends `command`, failing it if its answer (its status and headers: a download's body may then
   * take as long as its client reads) has not come within the timeout.
   */
  async send<T = unknown>(command: object, timeoutMs = this.timeoutMs): Promise<T> {
    // Typed by the caller: the client's own signature ties each command to its output through
    // types of the SDK's internals.
    const send = this.s3.send.bind(this.s3) as (
      command: object,
      options: { abortSignal: AbortSignal },
    ) => Promise<T>;
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new StoreTimeout(`no answer within ${timeoutMs / 1000} s`)),
      timeoutMs,
    );
    try {
      return await send(command, { abortSignal: controller.signal });
    } catch (e) {
      throw controller.signal.aborted ? controller.signal.reason : e;
    } finally {
      clearTimeout(timer);
    }
  }

  /** A 503 for a request the store failed: the store's words are logged, the caller gets its code. */
  unavailable(error: unknown, where = this.url): DomainError {
    this.log(`checkpoint bucket ${where}: ${describeS3Error(error)}`);
    return new DomainError(
      ErrorCode.StorageUnavailable,
      `the checkpoint bucket ${where} cannot be used now (${shortS3Error(error)}); retry later`,
      { retryAfterSeconds: 5 },
    );
  }

  /**
   * Whether the bucket is there and this server may use it: asked once at start, within 10 s (or
   * the request timeout, if shorter), so that a store that never answers does not hold the start.
   */
  async check(withinMs = 10_000): Promise<void> {
    await this.send(
      new this.sdk.HeadBucketCommand({ Bucket: this.at.bucket }),
      Math.min(this.timeoutMs, withinMs),
    );
  }

  /** What the last look at the bucket for /readyz found (undefined: usable), when, and whether one is under way. */
  private health: { at: number; warning: string | undefined; looking: boolean } = {
    at: 0,
    warning: undefined,
    looking: false,
  };

  /**
   * What was wrong with the bucket at the last look, if anything, for /readyz; a look (HeadBucket,
   * within 5 s) is started when the last is over 5 s old, and not awaited: a probe must answer at
   * once, whatever the store does. A bucket that fails does not stop the process's work, only
   * checkpoints, so this is a warning. /readyz needs no key, so it says the store's code and status
   * only; the store's own words go to the log when the bucket starts failing.
   */
  warning(): string | undefined {
    const { at, warning, looking } = this.health;
    if (!looking && Date.now() - at > 5_000) {
      this.health.looking = true;
      void this.check(5_000).then(
        () => {
          if (this.health.warning) this.log(`checkpoint bucket ${this.url}: answers again`);
          this.health = { at: Date.now(), warning: undefined, looking: false };
        },
        (e: unknown) => {
          if (!this.health.warning)
            this.log(`checkpoint bucket ${this.url}: ${describeS3Error(e)}`);
          this.health = {
            at: Date.now(),
            warning: `${this.url} cannot be used (${shortS3Error(e)}): checkpoint uploads and downloads fail with 503 STORAGE_UNAVAILABLE until it answers (CREDITLAB_CHECKPOINT_BUCKET)`,
            looking: false,
          };
        },
      );
    }
    return warning;
  }

  /**
   * An upload of checkpoint `iteration`: its own object, so that uploads never share one. `log`
   * keeps the upload's record until it is a checkpoint or gone (BucketUploadLog).
   */
  startUpload(
    runId: string,
    iteration: number,
    uploadId: string,
    log: BucketUploadLog,
  ): BucketUpload {
    // The run id is in lower case, as PostgreSQL writes a uuid (RunIdPipe): one key per run.
    const key = `${this.at.prefix}runs/${runId}/checkpoints/${iteration}/${uploadId}`;
    return new BucketUpload(this, key, log);
  }

  /**
   * A stored checkpoint's object, as chunks read as the caller pulls them, and `cancel`, which lets
   * the object's connection go (call it when the download ends, however it ends: a generator never
   * started never runs its cleanup). The object is asked for before the first chunk is handed out,
   * so that a store that fails, or an object gone, is an error answer rather than a download cut
   * short; its length is checked against the row's.
   */
  async read(
    objectUrl: string,
    bytes: number,
    what: string,
  ): Promise<{ chunks: AsyncGenerator<Buffer>; cancel: () => void }> {
    const { bucket, key } = parseObjectUrl(objectUrl);
    let got: GetObjectCommandOutput;
    try {
      got = await this.send(new this.sdk.GetObjectCommand({ Bucket: bucket, Key: key }));
    } catch (e) {
      if (isMissingObject(e))
        throw new DomainError(
          ErrorCode.NotFound,
          `${what} is recorded, but its object ${objectUrl} is gone from the bucket (deleted outside Creditlab, or by a lifecycle rule)`,
        );
      throw this.unavailable(e, `s3://${bucket}`);
    }
    const body = got.Body as Readable;
    const cancel = () => body.destroy();
    if (got.ContentLength !== bytes) {
      cancel();
      throw new Error(
        `${what}: its object ${objectUrl} holds ${got.ContentLength} bytes where its row says ${bytes}`,
      );
    }
    async function* chunks(): AsyncGenerator<Buffer> {
      try {
        for await (const chunk of body) yield chunk as Buffer;
      } finally {
        cancel();
      }
    }
    return { chunks: chunks(), cancel };
  }

  /**
   * Removes what an upload put in the bucket: its unfinished multipart upload (`multipartId`), and
   * its object if it was made. Either may already be gone.
   */
  async remove(objectUrl: string, multipartId: string | null): Promise<void> {
    const { bucket, key } = parseObjectUrl(objectUrl);
    if (multipartId !== null)
      await this.send(
        new this.sdk.AbortMultipartUploadCommand({
          Bucket: bucket,
          Key: key,
          UploadId: multipartId,
        }),
      ).catch((e: unknown) => {
        // Completed (the object is deleted next) or aborted already.
        if ((e as { name?: string })?.name !== 'NoSuchUpload') throw e;
      });
    await this.send(new this.sdk.DeleteObjectCommand({ Bucket: bucket, Key: key }));
  }
}
