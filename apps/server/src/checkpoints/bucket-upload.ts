import type { CompletedPart } from '@aws-sdk/client-s3';
import type { CheckpointBucket } from './checkpoint-bucket';
import type { CheckpointUpload } from './upload-parts';

/**
 * Bytes per part of a checkpoint written to a bucket. S3 refuses parts under 5 MiB (but the last)
 * and more than 10,000 of them, so 8 MiB parts allow checkpoints of up to 78 GiB.
 */
export const BUCKET_PART_BYTES = 8 * 1024 * 1024;

/**
 * The database's record of one upload into the bucket (BucketUploadRecords), kept from its first
 * request to the store until it is a checkpoint or removed: what the sweep removes if the server
 * dies in between. Only what this database recorded is ever swept, never what a listing finds, so
 * another deployment sharing the bucket keeps its objects.
 */
export interface BucketUploadLog {
  /** Before the first request to the store. */
  begin(objectUrl: string): Promise<void>;
  /** The multipart upload's id, once the store made one: the sweep can then abort it. */
  multipartStarted(multipartId: string): Promise<void>;
  /** Its bytes are removed from the bucket: the record goes too. */
  end(): Promise<void>;
}

/**
 * One checkpoint upload into a bucket, part by part as the body arrives. A checkpoint of one part
 * (most: a small policy) is one PutObject; a larger one a multipart upload, its first part held
 * until a second comes. Nothing is visible in the bucket until `complete`.
 */
export class BucketUpload implements CheckpointUpload {
  readonly partBytes = BUCKET_PART_BYTES;
  /** The first part, until a second says whether the upload is one part or many. */
  private held: Buffer | undefined;
  private multipart: { id: string; parts: CompletedPart[] } | undefined;
  /** The part (or the first two) being sent. */
  private sending: Promise<void> | undefined;
  /** A buffer whose part is stored, for the next part. */
  private spare: Buffer | undefined;
  private begun = false;
  private completed = false;

  constructor(
    private readonly store: CheckpointBucket,
    readonly key: string,
    private readonly log: BucketUploadLog,
  ) {}

  get objectUrl(): string {
    return `s3://${this.store.at.bucket}/${this.key}`;
  }

  /**
   * Part `ord` of the body; `bytes` is the caller's again once this resolves. A part is sent while
   * the next is read: this waits for the part before it to be stored, then copies `bytes` into
   * that part's buffer and starts sending. An upload so holds two 8 MiB buffers, its reader's and
   * the part being sent (three while its first part waits for its second).
   */
  readonly write = async (ord: number, bytes: Buffer): Promise<void> => {
    if (ord === 0) {
      this.held = this.copyOf(bytes);
      return;
    }
    const sdk = this.store.sdk;
    try {
      await this.sending;
      const part = this.copyOf(bytes);
      if (!this.multipart) {
        await this.begin();
        const created = await this.store.send<{ UploadId?: string }>(
          new sdk.CreateMultipartUploadCommand({
            Bucket: this.store.at.bucket,
            Key: this.key,
            ContentType: 'application/octet-stream',
          }),
        );
        this.multipart = { id: created.UploadId as string, parts: [] };
        await this.log.multipartStarted(this.multipart.id);
        const first = this.held as Buffer;
        this.held = undefined;
        this.startSending(async () => {
          await this.sendPart(first, 1);
          await this.sendPart(part, 2);
        });
      } else this.startSending(() => this.sendPart(part, ord + 1));
    } catch (e) {
      throw this.store.unavailable(e);
    }
  };

  /**
   * `bytes` copied into a buffer of the upload's own: the spare one, or a new one (of a whole part,
   * or only as long as a last part: a small checkpoint takes no 8 MiB). Where each part had a new
   * copy, an upload of 200 MiB peaked 100 MiB above the server's resting memory (about 70 reusing).
   */
  private copyOf(bytes: Buffer): Buffer {
    const buffer = this.spare ?? Buffer.allocUnsafe(bytes.length);
    this.spare = undefined;
    const part = buffer.subarray(0, bytes.length);
    bytes.copy(part);
    return part;
  }

  private async begin(): Promise<void> {
    if (this.begun) return;
    await this.log.begin(this.objectUrl);
    this.begun = true;
  }

  private startSending(send: () => Promise<void>): void {
    const sending = send();
    // Awaited by the next write, by complete or by discard: never a rejection no one handles.
    sending.catch(() => undefined);
    this.sending = sending;
  }

  private async sendPart(body: Buffer, PartNumber: number): Promise<void> {
    const m = this.multipart as { id: string; parts: CompletedPart[] };
    const sent = await this.store.send<{ ETag?: string }>(
      new this.store.sdk.UploadPartCommand({
        Bucket: this.store.at.bucket,
        Key: this.key,
        UploadId: m.id,
        PartNumber,
        Body: body,
        ContentLength: body.length,
      }),
    );
    m.parts[PartNumber - 1] = { PartNumber, ETag: sent.ETag };
    // Sent whole and answered: its buffer takes the next part, if it can hold one (a buffer this
    // large has an ArrayBuffer of its own).
    if (body.buffer.byteLength === BUCKET_PART_BYTES)
      this.spare = Buffer.from(body.buffer, 0, BUCKET_PART_BYTES);
  }

  /** Makes the object whole and visible; returns its URL. */
  async complete(): Promise<string> {
    const sdk = this.store.sdk;
    try {
      await this.sending;
      if (this.multipart)
        await this.store.send(
          new sdk.CompleteMultipartUploadCommand({
            Bucket: this.store.at.bucket,
            Key: this.key,
            UploadId: this.multipart.id,
            MultipartUpload: { Parts: this.multipart.parts },
          }),
        );
      else {
        await this.begin();
        const body = this.held ?? Buffer.alloc(0);
        await this.store.send(
          new sdk.PutObjectCommand({
            Bucket: this.store.at.bucket,
            Key: this.key,
            Body: body,
            ContentLength: body.length,
            ContentType: 'application/octet-stream',
          }),
        );
      }
    } catch (e) {
      throw this.store.unavailable(e);
    }
    this.completed = true;
    this.held = this.spare = undefined;
    return this.objectUrl;
  }

  /**
   * The upload will not be a checkpoint: its multipart upload is aborted and its object deleted
   * (one a PutObject that timed out may still have made), then its record goes.
   */
  async discard(): Promise<void> {
    this.held = this.spare = undefined;
    await this.sending?.catch(() => undefined);
    if (!this.begun) return;
    const unfinished = this.completed ? null : (this.multipart?.id ?? null);
    await this.store.remove(this.objectUrl, unfinished);
    await this.log.end();
  }
}
