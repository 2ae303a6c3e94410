import { request } from 'node:http';
import type { Readable } from 'node:stream';
import { ADMIN_KEY } from '../../test/support/test-server';

/**
 * POSTs an NDJSON body streamed from `body` with the admin key; with `size`, as Content-Length,
 * else chunked (the size not known up front). Resolves on 200, rejects with the status and answer.
 */
export function postNdjsonStream(url: string, body: Readable, size?: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = {
      'content-type': 'application/x-ndjson',
      authorization: `Bearer ${ADMIN_KEY}`,
    };
    if (size !== undefined) headers['content-length'] = size;
    const req = request(url, { method: 'POST', headers }, (res) => {
      let answer = '';
      res.on('data', (c) => (answer += c));
      res.on('end', () =>
        res.statusCode === 200 ? resolve() : reject(new Error(`${res.statusCode}: ${answer}`)),
      );
    });
    req.on('error', reject);
    body.pipe(req);
  });
}
