import { Logger, type Provider } from '@nestjs/common';
import { AppConfigToken, type AppConfig } from '../config/app-config.provider';
import { CheckpointBucket, describeS3Error } from './checkpoint-bucket';

/** Injection token of the checkpoint bucket: undefined when checkpoints stay in the database. */
export const CheckpointBucketToken = Symbol('CheckpointBucket');

/**
 * The bucket CREDITLAB_CHECKPOINT_BUCKET names, asked for once before the server starts: a bucket
 * that is missing, or that the credentials may not use, stops the start with the store's words,
 * rather than failing every upload later.
 */
export const checkpointBucketProvider: Provider = {
  provide: CheckpointBucketToken,
  inject: [AppConfigToken],
  useFactory: async (config: AppConfig): Promise<CheckpointBucket | undefined> => {
    const setting = config.checkpointBucket;
    if (!setting) return undefined;
    const logger = new Logger('checkpoints');
    const { checkpointUploads, checkpointDownloads } = config.limits;
    const bucket = await CheckpointBucket.open(setting.url, {
      pathStyle: setting.pathStyle,
      timeoutMs: setting.timeoutMs,
      maxConnections: checkpointUploads + checkpointDownloads + 16,
      log: (message) => logger.warn(message),
      downloadUrls: setting.downloadUrls,
    });
    logger.log(`checking the checkpoint bucket ${setting.url} at ${setting.endpoint ?? 'AWS S3'}`);
    try {
      await bucket.check();
    } catch (e) {
      bucket.destroy();
      throw new Error(
        `CREDITLAB_CHECKPOINT_BUCKET: cannot use ${setting.url} (${describeS3Error(e)}); check the bucket's name, the endpoint (AWS_ENDPOINT_URL_S3) and the credentials`,
      );
    }
    return bucket;
  },
};

/** Injection token of the origin the bucket's download URLs name; undefined without a bucket. */
export const BucketDownloadOriginToken = Symbol('BucketDownloadOrigin');

export const bucketDownloadOriginProvider: Provider = {
  provide: BucketDownloadOriginToken,
  inject: [CheckpointBucketToken],
  useFactory: (bucket: CheckpointBucket | undefined): Promise<string | undefined> | undefined =>
    bucket?.downloadOrigin(),
};
