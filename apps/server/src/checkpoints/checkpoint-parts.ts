import type pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { readBinaryCopy } from '../advantages/binary-copy';
import { isUuid } from '../database/uuid';
import { BinaryCopyRows, uuidBytes } from '../rollouts/binary-copy-rows';
import { CHECKPOINT_PART_BYTES, type CheckpointUpload } from './upload-parts';

const PART_COLUMNS = ['run_id', 'upload_id', 'ord', 'data'] as const;

/**
 * A checkpoint's bytes as rows of `checkpoint_parts`, under the id of the upload that wrote them
 * (migrations/20261208000000_checkpoint_parts). An upload writes its parts one statement each, before
 * its checkpoint row exists, so that no transaction stays open while a client sends; parts whose
 * upload never got its row are deleted by the upload, or by `sweepAbandoned`.
 */
export class CheckpointParts {
  constructor(private readonly pool: pg.Pool) {}

  /** An upload whose bytes become parts under `uploadId`. */
  startUpload(runId: string, uploadId: string): CheckpointUpload {
    return {
      partBytes: CHECKPOINT_PART_BYTES,
      write: (ord, bytes) => this.write(runId, uploadId, ord, bytes),
      complete: async () => null,
      discard: () => this.discard(runId, uploadId),
    };
  }

  /**
   * Writes one part by a binary COPY of one row (as ingest writes its steps): the bytes go once
   * into the COPY's buffer, where an INSERT's parameter is copied into node-postgres's message twice.
   */
  async write(runId: string, uploadId: string, ord: number, bytes: Buffer): Promise<void> {
    const row = new BinaryCopyRows()
      .row(4, 16 + 16 + 4 + bytes.length)
      .bytes(uuidBytes(runId))
      .bytes(uuidBytes(uploadId))
      .int4(ord)
      .bytes(bytes);
    const client = await this.pool.connect();
    let failed: Error | undefined;
    try {
      await row.copyInto(client, 'checkpoint_parts', PART_COLUMNS);
    } catch (e) {
      failed = e as Error;
      throw e;
    } finally {
      // A COPY cut off (its backend terminated, the connection lost) can leave the client looking
      // idle: handed back as healthy, it failed the upload's own cleanup next (helper's probe).
      client.release(failed);
    }
  }

  /**
   * Part `ord` of an upload, or undefined past its last. Read by a binary COPY: a SELECT's answer
   * spells a bytea in hex (twice its size), which node-postgres decodes into a string and back,
   * and its per-query binary results decode a bytea as text.
   */
  async read(runId: string, uploadId: string, ord: number): Promise<Buffer | undefined> {
    // COPY takes no parameters: the values are inlined, checked first.
    if (!isUuid(runId) || !isUuid(uploadId) || !Number.isInteger(ord))
      throw new Error(`not a part's key: ${runId}, ${uploadId}, ${ord}`);
    const client = await this.pool.connect();
    let failed: Error | undefined;
    try {
      const copy = client.query(
        copyTo(`COPY (SELECT data FROM checkpoint_parts
                      WHERE run_id = '${runId}' AND upload_id = '${uploadId}' AND ord = ${ord})
                TO STDOUT (FORMAT binary)`),
      );
      let part: Buffer | undefined;
      await readBinaryCopy(copy, 1, (f) => {
        const start = f.start[0] as number;
        part = f.buf.subarray(start, start + (f.length[0] as number));
      });
      return part;
    } catch (e) {
      failed = e as Error;
      throw e;
    } finally {
      client.release(failed);
    }
  }

  /** Deletes the parts of an upload that will not become a checkpoint. */
  async discard(runId: string, uploadId: string): Promise<void> {
    await this.pool.query('DELETE FROM checkpoint_parts WHERE run_id = $1 AND upload_id = $2', [
      runId,
      uploadId,
    ]);
  }

  /**
   * Deletes the parts of uploads that no checkpoint names and that were written more than
   * `olderThanSeconds` ago, longer than any upload in progress can last: uploads cut off by a
   * crash or a lost database connection before they could delete their own. Returns how many.
   */
  async sweepAbandoned(olderThanSeconds: number): Promise<number> {
    const res = await this.pool.query(
      `DELETE FROM checkpoint_parts p
       WHERE p.created_at < now() - make_interval(secs => $1)
         AND NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.run_id = p.run_id AND c.upload_id = p.upload_id)`,
      [olderThanSeconds],
    );
    return res.rowCount ?? 0;
  }
}
