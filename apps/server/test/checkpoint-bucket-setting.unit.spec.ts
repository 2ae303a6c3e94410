import { ConfigError, loadConfig } from '../src/config/app-config';
import {
  describeS3Error,
  MAX_BUCKET_CHECKPOINT_BYTES,
  parseBucketUrl,
  shortS3Error,
} from '../src/checkpoints/checkpoint-bucket';
import { BUCKET_PART_BYTES } from '../src/checkpoints/bucket-upload';

const GIB = 1024 ** 3;

test('CREDITLAB_CHECKPOINT_BUCKET is an s3:// URL with an optional prefix; anything else stops the start, naming it', () => {
  expect(parseBucketUrl('s3://lab-checkpoints')).toEqual({ bucket: 'lab-checkpoints', prefix: '' });
  expect(parseBucketUrl('s3://lab.ckpt/creditlab/prod/')).toEqual({
    bucket: 'lab.ckpt',
    prefix: 'creditlab/prod/',
  });
  for (const bad of ['lab-checkpoints', 'https://s3.amazonaws.com/lab', 's3://UPPER', 's3://ab'])
    expect(() => loadConfig({ CREDITLAB_CHECKPOINT_BUCKET: bad })).toThrow(
      /CREDITLAB_CHECKPOINT_BUCKET: expected s3:\/\/bucket/,
    );
});

test('the bucket is named in the path when an endpoint is set (MinIO and kin), by host on AWS, unless told', () => {
  const bucket = (env: Record<string, string>) =>
    loadConfig({ CREDITLAB_CHECKPOINT_BUCKET: 's3://lab-ckpt', ...env }).checkpointBucket;
  expect(bucket({})).toEqual({
    url: 's3://lab-ckpt',
    pathStyle: false,
    timeoutMs: 120_000,
    downloadUrls: { seconds: 900 },
  });
  expect(bucket({ CREDITLAB_CHECKPOINT_BUCKET_TIMEOUT_SECONDS: '2' })?.timeoutMs).toBe(2000);
  expect(bucket({ AWS_ENDPOINT_URL_S3: 'http://minio:9000' })?.pathStyle).toBe(true);
  expect(bucket({ AWS_ENDPOINT_URL: 'http://minio:9000' })?.pathStyle).toBe(true);
  expect(
    bucket({
      AWS_ENDPOINT_URL: 'https://r2.example',
      CREDITLAB_CHECKPOINT_BUCKET_PATH_STYLE: 'false',
    })?.pathStyle,
  ).toBe(false);
  expect(loadConfig({}).checkpointBucket).toBeUndefined();
});

test("presigned download URLs last 1 s to a week, S3's limit, and name an http(s) endpoint if one is set", () => {
  const urls = (env: Record<string, string>) =>
    loadConfig({ CREDITLAB_CHECKPOINT_BUCKET: 's3://lab-ckpt', ...env }).checkpointBucket
      ?.downloadUrls;
  expect(
    urls({
      CREDITLAB_CHECKPOINT_URL_SECONDS: '604800',
      CREDITLAB_CHECKPOINT_URL_ENDPOINT: 'https://ckpt.lab.example',
    }),
  ).toEqual({ seconds: 604_800, endpoint: 'https://ckpt.lab.example' });
  for (const seconds of ['0', '604801', '1.5', 'soon'])
    expect(() => urls({ CREDITLAB_CHECKPOINT_URL_SECONDS: seconds })).toThrow(
      /CREDITLAB_CHECKPOINT_URL_SECONDS/,
    );
  expect(urls({ CREDITLAB_CHECKPOINT_URL_ENDPOINT: 'http://minio.lab:9000/' })?.endpoint).toBe(
    'http://minio.lab:9000/',
  );
  for (const endpoint of [
    'minio:9000',
    'ftp://minio:9000',
    'https://lab.example/minio',
    'https://lab.example?x=1',
  ])
    expect(() => urls({ CREDITLAB_CHECKPOINT_URL_ENDPOINT: endpoint })).toThrow(
      /CREDITLAB_CHECKPOINT_URL_ENDPOINT/,
    );
});

test('checkpoints past 1 GiB need a bucket; with one they may reach 64 GiB', () => {
  expect(() => loadConfig({ CREDITLAB_MAX_CHECKPOINT_BYTES: String(2 * GIB) })).toThrow(
    ConfigError,
  );
  expect(() => loadConfig({ CREDITLAB_MAX_CHECKPOINT_BYTES: String(2 * GIB) })).toThrow(
    /CREDITLAB_MAX_CHECKPOINT_BYTES: at most 1073741824 \(1 GiB\) while checkpoints are stored in the database; set CREDITLAB_CHECKPOINT_BUCKET/,
  );
  expect(
    loadConfig({ CREDITLAB_MAX_CHECKPOINT_BYTES: String(GIB) }).limits.maxCheckpointBytes,
  ).toBe(GIB);
  const withBucket = (bytes: number) =>
    loadConfig({
      CREDITLAB_CHECKPOINT_BUCKET: 's3://lab-ckpt',
      CREDITLAB_MAX_CHECKPOINT_BYTES: String(bytes),
    }).limits.maxCheckpointBytes;
  expect(withBucket(64 * GIB)).toBe(64 * GIB);
  expect(() => withBucket(64 * GIB + 1)).toThrow(/CREDITLAB_MAX_CHECKPOINT_BYTES/);
});

test("a store's error is told by its code and message, or by its status when it came without a body", () => {
  const withStatus = (e: object, status: number) =>
    Object.assign(e, { $metadata: { httpStatusCode: status } });
  expect(describeS3Error(withStatus({ name: 'Unknown', message: 'UnknownError' }, 403))).toBe(
    'HTTP 403, access denied: the credentials may not use it',
  );
  expect(describeS3Error(withStatus({ name: 'NotFound', message: 'NotFound' }, 404))).toBe(
    'HTTP 404, no such bucket',
  );
  expect(
    describeS3Error(
      withStatus({ name: 'NoSuchBucket', message: 'The specified bucket does not exist' }, 404),
    ),
  ).toBe('NoSuchBucket: The specified bucket does not exist (HTTP 404)');
  expect(
    describeS3Error(
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }),
    ),
  ).toBe('ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:9');
});

test("a caller is told the store's code and status only; its message (accounts, roles, hosts) goes to the log", () => {
  const denied = Object.assign(
    new Error('User: arn:aws:iam::123456789012:role/lab is not authorized'),
    {
      name: 'AccessDenied',
      $metadata: { httpStatusCode: 403 },
    },
  );
  expect(shortS3Error(denied)).toBe('AccessDenied, HTTP 403');
  expect(describeS3Error(denied)).toContain('arn:aws:iam::123456789012');
  expect(
    shortS3Error(
      Object.assign(new Error('connect ECONNREFUSED 10.0.0.7:9000'), { code: 'ECONNREFUSED' }),
    ),
  ).toBe('ECONNREFUSED');
  expect(shortS3Error({ name: 'Unknown', $metadata: { httpStatusCode: 404 } })).toBe('HTTP 404');
  // HeadBucket's 404 has no body: the SDK names it by its status, its message "UnknownError".
  const noBucket = {
    name: 'NotFound',
    message: 'UnknownError',
    $metadata: { httpStatusCode: 404 },
  };
  expect(describeS3Error(noBucket)).toBe('HTTP 404, no such bucket');
  expect(shortS3Error(noBucket)).toBe('HTTP 404');
});

test("parts are within S3's rules: at least 5 MiB, and the largest checkpoint in at most 10,000 of them", () => {
  expect(BUCKET_PART_BYTES).toBeGreaterThanOrEqual(5 * 1024 * 1024);
  expect(Math.ceil(MAX_BUCKET_CHECKPOINT_BYTES / BUCKET_PART_BYTES)).toBeLessThanOrEqual(10_000);
});
