import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { mkdtempSync } from 'node:fs';
import { utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';

/** s3rver's fixed keys: it refuses requests signed with any other. */
const KEYS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

/**
 * An S3-compatible server for the tests (s3rver: the S3 REST API over HTTP, objects in a folder),
 * in this process, with one bucket. It can be stopped and started again on the same port and
 * folder, as a store that goes away and comes back.
 */
export class S3BucketServer {
  readonly dir = mkdtempSync(path.join(tmpdir(), 'creditlab-s3-'));
  private server: S3rver | undefined;
  port = 0;
  /** An S3 client of the test's own, to look at the bucket the server writes. */
  client!: S3Client;

  constructor(readonly bucket: string) {}

  async start(): Promise<this> {
    this.server = new S3rver({
      address: '127.0.0.1',
      port: this.port,
      directory: this.dir,
      silent: true,
      configureBuckets: [{ name: this.bucket }],
    });
    this.port = (await this.server.run()).port;
    this.client ??= new S3Client({
      endpoint: this.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: KEYS,
    });
    return this;
  }

  async stop(): Promise<void> {
    await this.server?.close();
    this.server = undefined;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The server's settings for a bucket at `s3://<bucket>/<prefix>`, reached with `keys`. */
  serverEnv(prefix: string, keys = KEYS): Record<string, string> {
    return {
      CREDITLAB_CHECKPOINT_BUCKET: `s3://${this.bucket}/${prefix}`,
      AWS_ENDPOINT_URL_S3: this.endpoint,
      AWS_ACCESS_KEY_ID: keys.accessKeyId,
      AWS_SECRET_ACCESS_KEY: keys.secretAccessKey,
    };
  }

  async keys(prefix: string): Promise<string[]> {
    const page = await this.client.send(
      new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix }),
    );
    return (page.Contents ?? []).map((o) => o.Key as string).sort();
  }

  async read(key: string): Promise<Buffer> {
    const got = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
    return Buffer.from(
      await (got.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
    );
  }

  async put(key: string, body: Buffer): Promise<void> {
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body }));
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  /**
   * Makes an object look `seconds` old to listings: s3rver reports its file's modification time as
   * the object's LastModified, and S3 has no call that sets it.
   */
  async age(key: string, seconds: number): Promise<void> {
    const parts = key.split('/');
    const last = parts.pop() as string;
    const file = path.join(this.dir, this.bucket, ...parts, `${last}._S3rver_object`);
    const then = new Date(Date.now() - seconds * 1000);
    await utimes(file, then, then);
  }
}
