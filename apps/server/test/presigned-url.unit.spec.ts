import { createHash, createHmac } from 'node:crypto';
import { CheckpointBucket } from '../src/checkpoints/checkpoint-bucket';

// The test's S3 server (s3rver) takes any SigV4 signature from a key it knows, so presigned URLs are
// checked here against SigV4 computed independently, with the secret: a URL signed for another host
// than the one it names, or whose filename is not signed, fails.

const KEYS = { AWS_ACCESS_KEY_ID: 'AKIDCREDITLABTEST', AWS_SECRET_ACCESS_KEY: 'c3VwZXItc2VjcmV0' };

const hmac = (key: Buffer | string, text: string) =>
  createHmac('sha256', key).update(text).digest();
/** RFC 3986 encoding, as SigV4 wants every query name and value. */
const encode = (s: string) =>
  encodeURIComponent(s).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );

/** Whether `url`'s query signature is SigV4's for a GET of it, signed with `secret`. */
function signatureHolds(url: URL, secret: string): boolean {
  const q = url.searchParams;
  const [date, region, service] = q.get('X-Amz-Credential')!.split('/').slice(1, 4) as string[];
  const query = [...q.entries()]
    .filter(([name]) => name !== 'X-Amz-Signature')
    .map(([name, value]) => `${encode(name)}=${encode(value)}`)
    .sort()
    .join('&');
  const signed = q.get('X-Amz-SignedHeaders')!.split(';');
  expect(signed).toEqual(['host']);
  const request = ['GET', url.pathname, query, `host:${url.host}\n`, 'host', 'UNSIGNED-PAYLOAD'];
  const scope = `${date}/${region}/${service}/aws4_request`;
  const toSign = [
    'AWS4-HMAC-SHA256',
    q.get('X-Amz-Date'),
    scope,
    createHash('sha256').update(request.join('\n')).digest('hex'),
  ].join('\n');
  const key = ['aws4_request', service, region, date]
    .reverse()
    .reduce<Buffer | string>((k, part) => hmac(k, part as string), `AWS4${secret}`);
  return hmac(key, toSign).toString('hex') === q.get('X-Amz-Signature');
}

let saved: NodeJS.ProcessEnv;
beforeAll(() => {
  saved = { ...process.env };
  // The SDK reads its endpoint and keys from the environment itself.
  Object.assign(process.env, KEYS, { AWS_ENDPOINT_URL_S3: 'http://minio.internal:9000' });
  delete process.env.AWS_SESSION_TOKEN;
  delete process.env.AWS_PROFILE;
});
afterAll(() => {
  process.env = saved;
});

async function signedWithExpiry(
  endpoint: string | undefined,
  filename?: string,
): Promise<{ url: URL; expiresAt: Date }> {
  const bucket = await CheckpointBucket.open('s3://lab-ckpt/creditlab', {
    pathStyle: true,
    timeoutMs: 1000,
    maxConnections: 1,
    log: () => undefined,
    downloadUrls: { seconds: 600, endpoint },
    env: { AWS_REGION: 'eu-west-3' },
  });
  try {
    const { url, expiresAt } = await bucket.downloadUrl(
      's3://lab-ckpt/creditlab/runs/0b0e/checkpoints/3/9f1c',
      filename,
    );
    return { url: new URL(url), expiresAt };
  } finally {
    bucket.destroy();
  }
}

const signed = async (endpoint: string | undefined, filename?: string) =>
  (await signedWithExpiry(endpoint, filename)).url;

test('a presigned URL is signed for the host and path it names, its lifetime and its filename', async () => {
  const url = await signed('https://ckpt.lab.example', 'my-run-checkpoint-3.bin');
  expect(url.origin).toBe('https://ckpt.lab.example');
  expect(url.pathname).toBe('/lab-ckpt/creditlab/runs/0b0e/checkpoints/3/9f1c');
  expect(url.searchParams.get('X-Amz-Expires')).toBe('600');
  expect(url.searchParams.get('X-Amz-Credential')).toMatch(
    /^AKIDCREDITLABTEST\/\d{8}\/eu-west-3\/s3\/aws4_request$/,
  );
  expect(url.searchParams.get('response-content-disposition')).toBe(
    'attachment; filename="my-run-checkpoint-3.bin"',
  );
  expect(signatureHolds(url, KEYS.AWS_SECRET_ACCESS_KEY)).toBe(true);
  // The same signature does not hold for another host, another filename or another secret.
  const elsewhere = new URL(url);
  elsewhere.host = 'minio.internal:9000';
  expect(signatureHolds(elsewhere, KEYS.AWS_SECRET_ACCESS_KEY)).toBe(false);
  const renamed = new URL(url);
  renamed.searchParams.set('response-content-disposition', 'attachment; filename="x.bin"');
  expect(signatureHolds(renamed, KEYS.AWS_SECRET_ACCESS_KEY)).toBe(false);
  expect(signatureHolds(url, 'another-secret')).toBe(false);
});

test('without CREDITLAB_CHECKPOINT_URL_ENDPOINT the URL names the endpoint the server uses', async () => {
  const url = await signed(undefined);
  expect(url.origin).toBe('http://minio.internal:9000');
  expect(url.searchParams.has('response-content-disposition')).toBe(false);
  expect(signatureHolds(url, KEYS.AWS_SECRET_ACCESS_KEY)).toBe(true);
});

test('with temporary credentials, expiresAt is when they expire if that comes first', async () => {
  const expiration = new Date(Date.now() + 120_000);
  Object.assign(process.env, {
    AWS_SESSION_TOKEN: 'session-token',
    AWS_CREDENTIAL_EXPIRATION: expiration.toISOString(),
  });
  try {
    const { url, expiresAt } = await signedWithExpiry(undefined);
    expect(url.searchParams.get('X-Amz-Security-Token')).toBe('session-token');
    expect(expiresAt.getTime()).toBe(expiration.getTime()); // not the 600 s the URL says
  } finally {
    delete process.env.AWS_SESSION_TOKEN;
    delete process.env.AWS_CREDENTIAL_EXPIRATION;
  }
  const { expiresAt } = await signedWithExpiry(undefined);
  expect(expiresAt.getTime()).toBeGreaterThan(Date.now() + 590_000);
});
