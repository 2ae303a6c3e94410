import { Inject, Injectable, Logger } from '@nestjs/common';
import { createHash, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { Database } from '../database/database';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { describeS3Error as describeError } from './checkpoint-bucket';
import { EventAppender } from '../rollouts/event-appender.service';
import { runNotRunning } from '../rollouts/append-session';
import { serverEvent } from '../rollouts/event-origin';
import { CheckpointParts } from './checkpoint-parts';
import {
  CHECKPOINT_PART_BYTES,
  type CheckpointUpload,
  type PartSink,
  type ReceivedUpload,
} from './upload-parts';
import type { CheckpointBucket } from './checkpoint-bucket';
import { CheckpointBucketToken } from './checkpoint-bucket.provider';
import { BucketUploadRecords } from './bucket-upload-records';

export interface CheckpointInfo {
  iteration: number;
  format: string;
  sha256: string;
  bytes: number;
  createdAt: Date;
  /** Where to download it (relative to the server). */
  path: string;
  /** The object holding its bytes (s3://bucket/key) when they are in a bucket; null in the database. */
  objectUrl: string | null;
}

/** A checkpoint, and the URL its bytes may be downloaded from without a key (null: from the server). */
export interface CheckpointDownloadUrl extends CheckpointInfo {
  url: string | null;
  expiresAt: Date | null;
}

/**
 * Stores trainers' checkpoints and records each as a `checkpoint.saved` event. The event's id is
 * derived from (run, iteration), so a retried upload whose event was not yet recorded records it
 * exactly once.
 */
@Injectable()
export class CheckpointsService {
  private readonly parts: CheckpointParts;
  private readonly bucketUploads: BucketUploadRecords;
  private readonly logger = new Logger('checkpoints');

  constructor(
    @Inject(Database) private readonly db: Database,
    @Inject(EventAppender) private readonly appender: EventAppender,
    /** Where new checkpoints go when set (CREDITLAB_CHECKPOINT_BUCKET); else the database. */
    @Inject(CheckpointBucketToken) private readonly bucket: CheckpointBucket | undefined,
  ) {
    // Parts are writes, as ingest's are: they take the ingest pool's connections, not the readers'.
    this.parts = new CheckpointParts(db.ingestPool);
    this.bucketUploads = new BucketUploadRecords(db.ingestPool);
  }

  /**
   * Stores checkpoint `iteration` from the bytes `receive` hands to the sink it is given, in parts
   * of the size it is given, as they arrive: into the bucket when one is set, else the database.
   * Its row and its `checkpoint.saved` event go in one transaction: both or neither (a finished run
   * refuses both), and the bytes of an upload that ends without them are deleted. The same bytes
   * again are acknowledged; other bytes for the same (run, iteration) are refused.
   */
  async upload(
    runId: string,
    iteration: number,
    format: string,
    receive: (sink: PartSink, partBytes: number) => Promise<ReceivedUpload>,
  ): Promise<{ created: boolean; checkpoint: CheckpointInfo }> {
    const existing = await this.info(runId, iteration);
    if (existing) {
      // A retry of a stored checkpoint: its bytes are only hashed, to tell a retry from a conflict.
      const { sha256, bytes } = await receive(async () => undefined, CHECKPOINT_PART_BYTES);
      if (bytes === 0) throw emptyCheckpoint();
      if (sha256 !== existing.sha256) throw differentCheckpoint(runId, existing);
      await this.record(runId, existing);
      return { created: false, checkpoint: existing };
    }
    // Refused before a byte is stored, as its event would be: a finished run takes no checkpoint
    // (checked again, under the run's lock, when the event is recorded).
    await this.assertRunning(runId);
    const uploadId = randomUUID();
    const target = this.bucket
      ? this.bucket.startUpload(runId, iteration, uploadId, this.bucketUploads.of(runId, uploadId))
      : this.parts.startUpload(runId, uploadId);
    try {
      const { sha256, bytes } = await receive(target.write, target.partBytes);
      if (bytes === 0) throw emptyCheckpoint();
      const objectUrl = await target.complete();
      const stored = await this.recordNew(runId, uploadId, {
        iteration,
        format,
        sha256,
        bytes,
        createdAt: new Date(),
        path: checkpointPath(runId, iteration),
        objectUrl,
      });
      if (!stored.created) await this.discard(target, runId, uploadId);
      return stored;
    } catch (e) {
      await this.discard(target, runId, uploadId);
      throw e;
    }
  }

  /**
   * Records an upload whose parts are stored: its row and event. When another upload of the same
   * checkpoint got there first, its answer is this one's if the bytes are the same (created false),
   * else a conflict.
   */
  private async recordNew(
    runId: string,
    uploadId: string,
    checkpoint: CheckpointInfo,
  ): Promise<{ created: boolean; checkpoint: CheckpointInfo }> {
    let first: StoredCheckpoint | undefined;
    try {
      await this.record(runId, checkpoint, async (client) => {
        const inserted = await client.query<{ created_at: Date }>(
          `INSERT INTO checkpoints (run_id, iteration, format, sha256, size_bytes, upload_id, object_url)
           VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING RETURNING created_at`,
          [
            runId,
            checkpoint.iteration,
            checkpoint.format,
            Buffer.from(checkpoint.sha256, 'hex'),
            checkpoint.bytes,
            uploadId,
            checkpoint.objectUrl,
          ],
        );
        if (inserted.rows[0]) {
          checkpoint.createdAt = inserted.rows[0].created_at;
          // Its bytes are a checkpoint's from this commit on: no longer the sweep's.
          if (checkpoint.objectUrl !== null)
            await this.bucketUploads.forget(runId, uploadId, client);
        } else first = await this.stored(runId, checkpoint.iteration, client);
      });
    } catch (e) {
      // Its event already has the id this one's would have, and a body that differs (other
      // bytes, or the same bytes under another format) is refused before the row is reached.
      // Or the commit went through and only its answer was lost: the row found is this upload's.
      first = await this.stored(runId, checkpoint.iteration).catch(() => undefined);
      if (!first) throw e;
    }
    if (!first) return { created: true, checkpoint };
    const { uploadId: firstUpload, ...info } = first;
    if (firstUpload === uploadId) return { created: true, checkpoint: info };
    if (info.sha256 !== checkpoint.sha256) throw differentCheckpoint(runId, info);
    return { created: false, checkpoint: info };
  }

  private async assertRunning(runId: string): Promise<void> {
    const res = await this.db.pool.query<{ status: string }>(
      'SELECT status FROM runs WHERE id = $1',
      [runId],
    );
    const status = res.rows[0]?.status;
    if (status !== undefined && status !== 'running')
      throw runNotRunning(serverEvent('checkpoint.saved'), 1, runId, status);
  }

  /** The checkpoint's event, with its row written in the same transaction by `alsoWrite`. */
  private async record(
    runId: string,
    checkpoint: CheckpointInfo,
    alsoWrite?: (client: pg.PoolClient) => Promise<void>,
  ): Promise<void> {
    await this.appender.appendOne(
      runId,
      {
        id: eventIdOf(runId, checkpoint.iteration),
        type: 'checkpoint.saved',
        data: {
          iteration: checkpoint.iteration,
          uri: checkpoint.path,
          sha256: checkpoint.sha256,
          bytes: checkpoint.bytes,
          format: checkpoint.format,
        },
      },
      alsoWrite,
    );
  }

  /** An upload's bytes, when they will not be a checkpoint; left to the sweep if this fails too. */
  private async discard(target: CheckpointUpload, runId: string, uploadId: string): Promise<void> {
    await target
      .discard()
      .catch((e: unknown) =>
        this.logger.warn(
          `could not delete the bytes of abandoned upload ${uploadId} (run ${runId}), left to the hourly sweep: ${describeError(e)}`,
        ),
      );
  }

  /**
   * Deletes what uploads that ended without their checkpoint left behind and could not delete
   * themselves, once older than `olderThanSeconds`: parts in the database (CheckpointParts), and,
   * if a bucket is set, the objects and unfinished multipart uploads its records name
   * (BucketUploadRecords). Returns how many uploads of each.
   */
  async sweepAbandoned(olderThanSeconds: number): Promise<{ parts: number; objects: number }> {
    const parts = await this.parts.sweepAbandoned(olderThanSeconds);
    let objects = 0;
    if (this.bucket)
      for (const upload of await this.bucketUploads.abandoned(olderThanSeconds)) {
        // One the store will not remove (a permission missing, say) is tried again next time;
        // the others go on.
        try {
          if (!upload.named) {
            await this.bucket.remove(upload.objectUrl, upload.multipartId);
            objects++;
          }
          await this.bucketUploads.forget(upload.runId, upload.uploadId);
        } catch (e) {
          this.logger.warn(
            `could not remove abandoned upload ${upload.uploadId} (run ${upload.runId}, ${upload.objectUrl}) from the bucket; tried again at the next sweep: ${describeError(e)}`,
          );
        }
      }
    return { parts, objects };
  }

  async list(runId: string): Promise<CheckpointInfo[]> {
    const res = await this.db.pool.query<Row>(`${SELECT_INFO} ORDER BY iteration`, [runId]);
    return res.rows.map((r) => toInfo(runId, r));
  }

  async info(runId: string, iteration: number): Promise<CheckpointInfo | undefined> {
    const stored = await this.stored(runId, iteration);
    if (!stored) return undefined;
    const { uploadId: _, ...info } = stored;
    return info;
  }

  /** A checkpoint's facts and the upload whose bytes it is. */
  private async stored(
    runId: string,
    iteration: number,
    db: Pick<pg.Pool, 'query'> = this.db.pool,
  ): Promise<StoredCheckpoint | undefined> {
    const res = await db.query<Row & { upload_id: string }>(
      `SELECT ${INFO_COLUMNS}, upload_id FROM checkpoints WHERE run_id = $1 AND iteration = $2`,
      [runId, iteration],
    );
    const row = res.rows[0];
    return row && { ...toInfo(runId, row), uploadId: row.upload_id };
  }

  /**
   * A checkpoint's facts, and its bytes as parts read one after the other as the caller pulls
   * them: a download holds a part or two, not the checkpoint. A checkpoint never changes once
   * stored, so the parts need no common snapshot.
   */
  async open(
    runId: string,
    iteration: number,
  ): Promise<{ info: CheckpointInfo; chunks: AsyncGenerator<Buffer>; cancel: () => void }> {
    const { uploadId, ...info } = await this.mustFind(runId, iteration);
    if (info.objectUrl !== null) {
      const what = `checkpoint ${iteration} of run ${runId}`;
      const bucket = this.bucketOf(runId, info);
      return { info, ...(await bucket.read(info.objectUrl, info.bytes, what)) };
    }
    // The first part is read before the answer starts: a database that fails now is a 503 with a
    // JSON body, not a status line already sent and a connection cut.
    const first = await this.part(runId, uploadId, 0, iteration);
    return { info, chunks: this.chunks(runId, uploadId, info, first), cancel: () => undefined };
  }

  /**
   * A checkpoint's facts and where a client may download its bytes from the bucket itself, with no
   * key: a presigned URL and when it expires. Null for bytes in the database, which only the
   * server's download serves.
   */
  async downloadUrl(
    runId: string,
    iteration: number,
    filename?: string,
  ): Promise<CheckpointDownloadUrl> {
    const { uploadId: _, ...info } = await this.mustFind(runId, iteration);
    if (info.objectUrl === null) return { ...info, url: null, expiresAt: null };
    const bucket = this.bucketOf(runId, info);
    return { ...info, ...(await bucket.downloadUrl(info.objectUrl, filename)) };
  }

  private async mustFind(runId: string, iteration: number): Promise<StoredCheckpoint> {
    const row = await this.stored(runId, iteration);
    if (row) return row;
    const have = (await this.list(runId)).map((c) => c.iteration);
    throw new DomainError(
      ErrorCode.NotFound,
      `run ${runId} has no checkpoint ${iteration}; it has ${have.length ? have.join(', ') : 'none'}`,
      { iteration, checkpoints: have },
    );
  }

  /** The bucket a checkpoint's object is in: this server's, which a server without one lacks. */
  private bucketOf(runId: string, info: CheckpointInfo): CheckpointBucket {
    if (this.bucket) return this.bucket;
    throw new DomainError(
      ErrorCode.StorageUnavailable,
      `checkpoint ${info.iteration} of run ${runId} is in a bucket (${info.objectUrl}), and this server has none set (CREDITLAB_CHECKPOINT_BUCKET)`,
    );
  }

  private async *chunks(
    runId: string,
    uploadId: string,
    info: CheckpointInfo,
    first: Buffer,
  ): AsyncGenerator<Buffer> {
    yield first;
    // Parts are read by number until the checkpoint's bytes are out, whatever size they were cut to.
    for (let ord = 1, sent = first.length; sent < info.bytes; ord++) {
      const part = await this.part(runId, uploadId, ord, info.iteration);
      sent += part.length;
      yield part;
    }
  }

  private async part(
    runId: string,
    uploadId: string,
    ord: number,
    iteration: number,
  ): Promise<Buffer> {
    const part = await this.parts.read(runId, uploadId, ord);
    if (!part) throw new Error(`checkpoint ${iteration} of run ${runId} lacks its part ${ord}`);
    return part;
  }
}

const INFO_COLUMNS = 'iteration, format, sha256, size_bytes, created_at, object_url';
const SELECT_INFO = `SELECT ${INFO_COLUMNS} FROM checkpoints WHERE run_id = $1`;

const emptyCheckpoint = () => new DomainError(ErrorCode.InvalidInput, 'empty checkpoint');

function differentCheckpoint(
  runId: string,
  existing: { iteration: number; sha256: string },
): DomainError {
  return new DomainError(
    ErrorCode.Conflict,
    `run ${runId} already has a different checkpoint ${existing.iteration} (sha256 ${existing.sha256}); checkpoints are immutable`,
    { iteration: existing.iteration, sha256: existing.sha256 },
  );
}

type StoredCheckpoint = CheckpointInfo & { uploadId: string };

interface Row {
  iteration: number;
  format: string;
  sha256: Buffer;
  /** bigint: a string from node-postgres. */
  size_bytes: string;
  created_at: Date;
  object_url: string | null;
}

function toInfo(runId: string, r: Row): CheckpointInfo {
  return {
    iteration: r.iteration,
    format: r.format,
    sha256: r.sha256.toString('hex'),
    bytes: Number(r.size_bytes),
    createdAt: r.created_at,
    path: checkpointPath(runId, r.iteration),
    objectUrl: r.object_url,
  };
}

export const checkpointPath = (runId: string, iteration: number): string =>
  `/v1/runs/${runId}/checkpoints/${iteration}`;

/** A UUID (v4 layout) from SHA-256 of (run, iteration): the same upload always names the same event. */
function eventIdOf(runId: string, iteration: number): string {
  const h = createHash('sha256').update(`checkpoint.saved:${runId}:${iteration}`).digest();
  h[6] = ((h[6] as number) & 0x0f) | 0x40;
  h[8] = ((h[8] as number) & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}
