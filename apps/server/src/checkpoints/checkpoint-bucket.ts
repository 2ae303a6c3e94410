import type { CompletedPart, GetObjectCommandOutput, S3Client } from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import type pg from 'pg';
import { DomainError, ErrorCode } from '../errors/domain-error';
import type { CheckpointUpload } from './upload-parts';

type Sdk = typeof import('@aws-sdk/client-s3');

/**
 * Bytes per part of a checkpoint written to a bucket. S3 refuses parts under 5 MiB (but the last)
 * and more than 10,000 of them, so 8 MiB parts allow checkpoints of up to 78 GiB; an upload holds
 * two parts at a time (the one being read, the one being sent).
 */
export const BUCKET_PART_BYTES = 8 * 1024 * 1024;

/** The largest checkpoint a bucket takes here: S3's 10,000 parts of BUCKET_PART_BYTES, less a margin. */
export const MAX_BUCKET_CHECKPOINT_BYTES = 64 * 1024 * 1024 * 1024;

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

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
/** The tail of an upload's key (checkpointKey): run, checkpoint, upload. */
const KEY_TAIL = new RegExp(`runs/(${UUID})/checkpoints/(\\d+)/(${UUID})$`);

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

/** The store's error code and message, or the connection's error. */
export function describeS3Error(error: unknown): string {
  const e = error as {
    name?: string;
    Code?: string;
    code?: string;
    message?: string;
    $metadata?: { httpStatusCode?: number };
  };
  const status = e?.$metadata?.httpStatusCode;
  const code = e?.Code ?? e?.code ?? e?.name ?? 'error';
  if (status !== undefined && /^Unknown/.test(code))
    return `HTTP ${status}${BARE_STATUS[status] ? `, ${BARE_STATUS[status]}` : ''}`;
  const message = e?.message && e.message !== code ? `: ${e.message}` : '';
  return `${code}${message}${status !== undefined ? ` (HTTP ${status})` : ''}`;
}

/** A bucket that fails a request, as a 503 that names it and says what the store said. */
export function bucketUnavailable(where: string, error: unknown): DomainError {
  return new DomainError(
    ErrorCode.StorageUnavailable,
    `the checkpoint bucket ${where} cannot be used now (${describeS3Error(error)}); retry later`,
  );
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
    private readonly sdk: Sdk,
    readonly s3: S3Client,
    readonly at: BucketAddress,
  ) {}

  /**
   * The bucket `url` names. Endpoint, region and credentials come from the AWS SDK's own settings
   * (AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, AWS_REGION, the credential chain: keys, a profile,
   * an instance role), so that a lab's usual AWS set-up works unchanged; `pathStyle` names the
   * bucket in the path rather than the host, as MinIO and most other stores want.
   */
  static async open(url: string, options: { pathStyle: boolean; env?: NodeJS.ProcessEnv }) {
    const env = options.env ?? process.env;
    // Loaded only when a bucket is set: the SDK is large, and a server without one need not pay for it.
    const sdk = await import('@aws-sdk/client-s3');
    const s3 = new sdk.S3Client({
      forcePathStyle: options.pathStyle,
      // The SDK's own region lookup ends in an error at the first request; a store other than AWS
      // rarely cares which region it is asked in.
      region: env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
      // Checksums the store does not ask for are not sent: several S3-compatible stores refuse the
      // SDK's newer default ones. A checkpoint is held to the SHA-256 taken as it arrives.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // A store that does not answer fails the request within seconds rather than holding an upload.
      requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
    });
    return new CheckpointBucket(sdk, s3, parseBucketUrl(url));
  }

  get url(): string {
    return `s3://${this.at.bucket}/${this.at.prefix}`;
  }

  /** Whether the bucket is there and this server may use it: asked once at start. */
  async check(): Promise<void> {
    await this.s3.send(new this.sdk.HeadBucketCommand({ Bucket: this.at.bucket }));
  }

  /** An upload of checkpoint `iteration`: its own object, so that uploads never share one. */
  startUpload(runId: string, iteration: number, uploadId: string): BucketUpload {
    const key = `${this.at.prefix}runs/${runId}/checkpoints/${iteration}/${uploadId}`;
    return new BucketUpload(this.sdk, this.s3, this.at.bucket, key, this.url);
  }

  /**
   * A stored checkpoint's object, as chunks read as the caller pulls them. The object is asked for
   * before the first chunk is handed out, so that a store that fails, or an object gone, is an
   * error answer rather than a download cut short; its length is checked against the row's.
   */
  async read(objectUrl: string, bytes: number, what: string): Promise<AsyncGenerator<Buffer>> {
    const { bucket, key } = parseObjectUrl(objectUrl);
    let got: GetObjectCommandOutput;
    try {
      got = await this.s3.send(new this.sdk.GetObjectCommand({ Bucket: bucket, Key: key }));
    } catch (e) {
      if (isMissingObject(e))
        throw new DomainError(
          ErrorCode.NotFound,
          `${what} is recorded, but its object ${objectUrl} is gone from the bucket (deleted outside Creditlab, or by a lifecycle rule)`,
        );
      throw bucketUnavailable(`s3://${bucket}`, e);
    }
    const body = got.Body as Readable;
    if (got.ContentLength !== bytes) {
      body.destroy();
      throw new Error(
        `${what}: its object ${objectUrl} holds ${got.ContentLength} bytes where its row says ${bytes}`,
      );
    }
    return (async function* () {
      try {
        for await (const chunk of body) yield chunk as Buffer;
      } finally {
        // A download cut off leaves the object's response unread; its connection is let go.
        body.destroy();
      }
    })();
  }

  /**
   * Deletes objects under `<prefix>runs/` that have an upload's key, are older than
   * `olderThanSeconds`, and that no checkpoint row names: uploads whose object was made but whose
   * row never was (the server killed between the two, the database gone at that moment). Objects
   * of other shapes are left alone, and so are unfinished multipart uploads a crash left behind:
   * those are the bucket's lifecycle rule's to abort (docs/scaling.md). Returns how many it deleted.
   */
  async sweepOrphans(pool: Pick<pg.Pool, 'query'>, olderThanSeconds: number): Promise<number> {
    const cutoff = Date.now() - olderThanSeconds * 1000;
    let deleted = 0;
    let token: string | undefined;
    do {
      const page = await this.s3.send(
        new this.sdk.ListObjectsV2Command({
          Bucket: this.at.bucket,
          Prefix: `${this.at.prefix}runs/`,
          ContinuationToken: token,
        }),
      );
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
      const candidates = (page.Contents ?? []).flatMap((o) => {
        const m = o.Key === undefined ? null : KEY_TAIL.exec(o.Key);
        const old = o.LastModified !== undefined && o.LastModified.getTime() < cutoff;
        return m && old && o.Key === `${this.at.prefix}${m[0]}`
          ? [{ key: o.Key, runId: m[1] as string, uploadId: m[3] as string }]
          : [];
      });
      if (candidates.length === 0) continue;
      const named = await pool.query<{ run_id: string; upload_id: string }>(
        `SELECT run_id, upload_id FROM checkpoints
         WHERE (run_id, upload_id) IN (SELECT * FROM unnest($1::uuid[], $2::uuid[]))`,
        [candidates.map((c) => c.runId), candidates.map((c) => c.uploadId)],
      );
      const kept = new Set(named.rows.map((r) => `${r.run_id}/${r.upload_id}`));
      const orphans = candidates.filter((c) => !kept.has(`${c.runId}/${c.uploadId}`));
      if (orphans.length === 0) continue;
      await this.s3.send(
        new this.sdk.DeleteObjectsCommand({
          Bucket: this.at.bucket,
          Delete: { Objects: orphans.map((o) => ({ Key: o.key })), Quiet: true },
        }),
      );
      deleted += orphans.length;
    } while (token !== undefined);
    return deleted;
  }
}

/**
 * One checkpoint upload into a bucket, part by part as the body arrives. A checkpoint of one part
 * (most: a small policy) is one PutObject; a larger one a multipart upload, its first part held
 * until a second comes. Nothing is visible in the bucket until `complete`.
 */
export class BucketUpload implements CheckpointUpload {
  readonly partBytes = BUCKET_PART_BYTES;
  private held: Buffer | undefined;
  private multipart: { uploadId: string; parts: CompletedPart[] } | undefined;
  /** The part (or the first two) being sent. */
  private sending: Promise<void> | undefined;
  /** Buffers whose parts are stored, for the next parts. */
  private readonly free: Buffer[] = [];
  private completed = false;

  constructor(
    private readonly sdk: Sdk,
    private readonly s3: S3Client,
    private readonly bucket: string,
    readonly key: string,
    /** The bucket's URL, for errors. */
    private readonly where: string,
  ) {}

  get objectUrl(): string {
    return `s3://${this.bucket}/${this.key}`;
  }

  /**
   * Part `ord` of the body; `bytes` is the caller's again once this resolves. A part is sent while
   * the next is read: this resolves once the part before it is stored, so an upload holds three
   * parts at most (the one read, the one sent, and a copy between).
   */
  readonly write = async (ord: number, bytes: Buffer): Promise<void> => {
    const part = this.copyOf(bytes);
    if (ord === 0) {
      this.held = part;
      return;
    }
    try {
      await this.sending;
      if (!this.multipart) {
        const created = await this.s3.send(
          new this.sdk.CreateMultipartUploadCommand({
            Bucket: this.bucket,
            Key: this.key,
            ContentType: 'application/octet-stream',
          }),
        );
        this.multipart = { uploadId: created.UploadId as string, parts: [] };
        const first = this.held as Buffer;
        this.held = undefined;
        this.startSending(async () => {
          await this.sendPart(first, 1);
          await this.sendPart(part, 2);
        });
      } else this.startSending(() => this.sendPart(part, ord + 1));
    } catch (e) {
      throw bucketUnavailable(this.where, e);
    }
  };

  /**
   * `bytes` copied into a buffer of the upload's own: one whose part is stored, or a new one (of a
   * whole part, or only as long as a last part: a small checkpoint takes no 8 MiB). An upload
   * reuses two or three, where a copy per part left 8 MiB of garbage each time (an upload of 200 MiB
   * peaked 100 MiB above the server's resting memory; about 70 MiB with this).
   */
  private copyOf(bytes: Buffer): Buffer {
    const buffer = this.free.pop() ?? Buffer.allocUnsafe(bytes.length);
    const part = buffer.subarray(0, bytes.length);
    bytes.copy(part);
    return part;
  }

  private startSending(send: () => Promise<void>): void {
    const sending = send();
    // Awaited by the next write, by complete or by discard: never a rejection no one handles.
    sending.catch(() => undefined);
    this.sending = sending;
  }

  private async sendPart(body: Buffer, PartNumber: number): Promise<void> {
    const m = this.multipart as { uploadId: string; parts: CompletedPart[] };
    const sent = await this.s3.send(
      new this.sdk.UploadPartCommand({
        Bucket: this.bucket,
        Key: this.key,
        UploadId: m.uploadId,
        PartNumber,
        Body: body,
        ContentLength: body.length,
      }),
    );
    m.parts[PartNumber - 1] = { PartNumber, ETag: sent.ETag };
    // Sent whole and answered: its buffer takes another part, if it can hold one (a buffer this
    // large has an ArrayBuffer of its own).
    if (body.buffer.byteLength === BUCKET_PART_BYTES)
      this.free.push(Buffer.from(body.buffer, 0, BUCKET_PART_BYTES));
  }

  /** Makes the object whole and visible; returns its URL. */
  async complete(): Promise<string> {
    try {
      await this.sending;
      if (this.multipart)
        await this.s3.send(
          new this.sdk.CompleteMultipartUploadCommand({
            Bucket: this.bucket,
            Key: this.key,
            UploadId: this.multipart.uploadId,
            MultipartUpload: { Parts: this.multipart.parts },
          }),
        );
      else {
        const body = this.held ?? Buffer.alloc(0);
        await this.s3.send(
          new this.sdk.PutObjectCommand({
            Bucket: this.bucket,
            Key: this.key,
            Body: body,
            ContentLength: body.length,
            ContentType: 'application/octet-stream',
          }),
        );
      }
    } catch (e) {
      throw bucketUnavailable(this.where, e);
    }
    this.completed = true;
    this.held = undefined;
    return this.objectUrl;
  }

  /** What removes this upload's bytes from the bucket if `discard` cannot. */
  get leftTo(): string {
    return this.completed
      ? 'the hourly sweep will delete its object'
      : "the bucket's lifecycle rule for incomplete multipart uploads will remove its parts (docs/scaling.md)";
  }

  /** The upload will not be a checkpoint: its object is deleted, or its multipart upload aborted. */
  async discard(): Promise<void> {
    this.held = undefined;
    await this.sending?.catch(() => undefined);
    if (this.completed)
      await this.s3.send(new this.sdk.DeleteObjectCommand({ Bucket: this.bucket, Key: this.key }));
    else if (this.multipart)
      await this.s3.send(
        new this.sdk.AbortMultipartUploadCommand({
          Bucket: this.bucket,
          Key: this.key,
          UploadId: this.multipart.uploadId,
        }),
      );
  }
}
