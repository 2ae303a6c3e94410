import { Inject, Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { Database } from '../database/database';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { EventAppender } from '../rollouts/event-appender.service';

export interface CheckpointInfo {
  iteration: number;
  format: string;
  sha256: string;
  bytes: number;
  createdAt: Date;
  /** Where to download it (relative to the server). */
  path: string;
}

/**
 * Stores trainers' checkpoints and records each as a `checkpoint.saved` event. The event's id is
 * derived from (run, iteration), so a retried upload whose event was not yet recorded records it
 * exactly once.
 */
@Injectable()
export class CheckpointsService {
  constructor(
    @Inject(Database) private readonly db: Database,
    @Inject(EventAppender) private readonly appender: EventAppender,
  ) {}

  /**
   * Stores checkpoint `iteration` and its `checkpoint.saved` event in one transaction: both or
   * neither (a finished run refuses both). The same bytes again are acknowledged; other bytes
   * for the same (run, iteration) are refused.
   */
  async store(
    runId: string,
    iteration: number,
    format: string,
    data: Buffer,
  ): Promise<{ created: boolean; checkpoint: CheckpointInfo }> {
    const sha256 = createHash('sha256').update(data).digest('hex');
    const existing = await this.info(runId, iteration);
    if (existing && existing.sha256 !== sha256) throw differentCheckpoint(runId, existing);
    const checkpoint = existing ?? {
      iteration,
      format,
      sha256,
      bytes: data.length,
      createdAt: new Date(),
      path: checkpointPath(runId, iteration),
    };
    await this.appender.appendOne(
      runId,
      {
        id: eventIdOf(runId, iteration),
        type: 'checkpoint.saved',
        data: {
          iteration,
          uri: checkpoint.path,
          sha256: checkpoint.sha256,
          bytes: checkpoint.bytes,
          format: checkpoint.format,
        },
      },
      existing
        ? undefined
        : async (client) => {
            const inserted = await client.query<{ created_at: Date }>(
              `INSERT INTO checkpoints (run_id, iteration, format, sha256, size_bytes, data)
               VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING created_at`,
              [runId, iteration, format, Buffer.from(sha256, 'hex'), data.length, data],
            );
            const row = inserted.rows[0];
            if (!row) throw differentCheckpoint(runId, { iteration, sha256: 'unknown' });
            checkpoint.createdAt = row.created_at;
          },
    );
    return { created: !existing, checkpoint };
  }

  async list(runId: string): Promise<CheckpointInfo[]> {
    const res = await this.db.pool.query<Row>(
      `SELECT iteration, format, sha256, size_bytes, created_at FROM checkpoints WHERE run_id = $1 ORDER BY iteration`,
      [runId],
    );
    return res.rows.map((r) => toInfo(runId, r));
  }

  async info(runId: string, iteration: number): Promise<CheckpointInfo | undefined> {
    const res = await this.db.pool.query<Row>(
      `SELECT iteration, format, sha256, size_bytes, created_at FROM checkpoints WHERE run_id = $1 AND iteration = $2`,
      [runId, iteration],
    );
    return res.rows[0] && toInfo(runId, res.rows[0]);
  }

  /**
   * A checkpoint's facts, and its bytes as chunks read one after the other as the caller pulls
   * them: a download holds a chunk or two, not the checkpoint (a whole 200 MiB one took about 900 MiB
   * of the server's memory per download, as hex text and then bytes). A checkpoint never changes
   * once stored, so the chunks need no common snapshot.
   */
  async open(
    runId: string,
    iteration: number,
  ): Promise<{ info: CheckpointInfo; chunks: AsyncGenerator<Buffer> }> {
    const info = await this.info(runId, iteration);
    if (!info) {
      const have = (await this.list(runId)).map((c) => c.iteration);
      throw new DomainError(
        ErrorCode.NotFound,
        `run ${runId} has no checkpoint ${iteration}; it has ${have.length ? have.join(', ') : 'none'}`,
        { iteration, checkpoints: have },
      );
    }
    // The first chunk is read before the answer starts: a database that fails now is a 503 with a
    // JSON body, not a status line already sent and a connection cut.
    const first = await this.chunk(runId, iteration, 0);
    return { info, chunks: this.chunks(runId, iteration, info.bytes, first) };
  }

  private async *chunks(
    runId: string,
    iteration: number,
    bytes: number,
    first: Buffer,
  ): AsyncGenerator<Buffer> {
    yield first;
    for (let offset = first.length; offset < bytes; offset += DOWNLOAD_CHUNK_BYTES)
      yield await this.chunk(runId, iteration, offset);
  }

  private async chunk(runId: string, iteration: number, offset: number): Promise<Buffer> {
    const res = await this.db.pool.query<{ part: Buffer }>(
      `SELECT substring(data FROM $3 FOR $4) AS part FROM checkpoints WHERE run_id = $1 AND iteration = $2`,
      [runId, iteration, offset + 1, DOWNLOAD_CHUNK_BYTES],
    );
    const part = res.rows[0]?.part;
    if (!part)
      throw new Error(`checkpoint ${iteration} of run ${runId} vanished while it was read`);
    return part;
  }
}

/**
 * Bytes per read of a download. Larger chunks mean fewer round trips; each costs about three
 * times its size in memory while it is decoded (hex text, then bytes), and a client that stops
 * reading holds about two of them.
 */
const DOWNLOAD_CHUNK_BYTES = 1024 * 1024;

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

interface Row {
  iteration: number;
  format: string;
  sha256: Buffer;
  size_bytes: number;
  created_at: Date;
}

function toInfo(runId: string, r: Row): CheckpointInfo {
  return {
    iteration: r.iteration,
    format: r.format,
    sha256: r.sha256.toString('hex'),
    bytes: r.size_bytes,
    createdAt: r.created_at,
    path: checkpointPath(runId, r.iteration),
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
