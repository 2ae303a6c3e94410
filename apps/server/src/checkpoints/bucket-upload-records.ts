import type pg from 'pg';
import type { BucketUploadLog } from './bucket-upload';

/** An upload into the bucket that has been going for longer than any upload can. */
export interface AbandonedBucketUpload {
  runId: string;
  uploadId: string;
  objectUrl: string;
  multipartId: string | null;
  /** A checkpoint row names the upload: its object is the checkpoint's and stays. */
  named: boolean;
}

/**
 * `checkpoint_bucket_uploads` (migrations/20261212000000_checkpoints_in_a_bucket): one row per
 * upload into the bucket, from its first request to the store until its checkpoint row is written
 * (the same transaction deletes it) or its bytes are removed. A row left behind is an upload the
 * server did not finish (killed, or the store or database gone when it tried to clean up).
 */
export class BucketUploadRecords {
  constructor(private readonly pool: Pick<pg.Pool, 'query'>) {}

  /** The record of one upload, for BucketUpload. */
  of(runId: string, uploadId: string): BucketUploadLog {
    return {
      begin: async (objectUrl) => {
        await this.pool.query(
          `INSERT INTO checkpoint_bucket_uploads (run_id, upload_id, object_url) VALUES ($1, $2, $3)`,
          [runId, uploadId, objectUrl],
        );
      },
      multipartStarted: async (multipartId) => {
        await this.pool.query(
          `UPDATE checkpoint_bucket_uploads SET multipart_upload_id = $3
           WHERE run_id = $1 AND upload_id = $2`,
          [runId, uploadId, multipartId],
        );
      },
      end: () => this.forget(runId, uploadId),
    };
  }

  /** Deletes an upload's record: on `db`, the transaction that writes its checkpoint row. */
  async forget(
    runId: string,
    uploadId: string,
    db: Pick<pg.Pool, 'query'> = this.pool,
  ): Promise<void> {
    await db.query('DELETE FROM checkpoint_bucket_uploads WHERE run_id = $1 AND upload_id = $2', [
      runId,
      uploadId,
    ]);
  }

  /** Uploads begun more than `olderThanSeconds` ago and still recorded. */
  async abandoned(olderThanSeconds: number): Promise<AbandonedBucketUpload[]> {
    const res = await this.pool.query<{
      run_id: string;
      upload_id: string;
      object_url: string;
      multipart_upload_id: string | null;
      named: boolean;
    }>(
      `SELECT u.run_id, u.upload_id, u.object_url, u.multipart_upload_id,
              EXISTS (SELECT 1 FROM checkpoints c
                      WHERE c.run_id = u.run_id AND c.upload_id = u.upload_id) AS named
       FROM checkpoint_bucket_uploads u
       WHERE u.started_at < now() - make_interval(secs => $1)
       ORDER BY u.started_at`,
      [olderThanSeconds],
    );
    return res.rows.map((r) => ({
      runId: r.run_id,
      uploadId: r.upload_id,
      objectUrl: r.object_url,
      multipartId: r.multipart_upload_id,
      named: r.named,
    }));
  }
}
