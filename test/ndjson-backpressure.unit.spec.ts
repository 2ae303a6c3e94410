import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { ndjsonEvents } from '../apps/server/src/rollouts/ndjson-source';

/**
 * A request body is read only as fast as its events are stored: while the consumer (the database)
 * holds one event, the reader must stop taking more of the body, or a large request from a fast
 * client ends up in memory whole. Node's readline iterator alone buffers 1024 lines first, which for
 * events of a few hundred KB is most of a large request.
 */
test('while one event is being stored, the reader takes only a few more lines of the body', async () => {
  const body = Object.assign(new PassThrough(), { complete: false }) as unknown as PassThrough &
    IncomingMessage;
  const line = `${JSON.stringify({ id: 'x', type: 'metrics.logged', data: { pad: 'p'.repeat(4000) } })}\n`;
  let written = 0;
  // The client: writes lines as fast as the body takes them, 2000 in all.
  void (async () => {
    while (written < 2000) {
      written++;
      if (!body.write(line)) await new Promise((r) => body.once('drain', r));
    }
    (body as unknown as { complete: boolean }).complete = true;
    body.end();
  })();
  const events = ndjsonEvents(body, {
    maxLineBytes: 1 << 20,
    maxRequestBytes: 1 << 30,
    idleMs: 60_000,
  });
  await events.next(); // the first event, held like an event whose chunk is being written
  // Let the client write until the body stops taking lines (the count no longer moves).
  for (let before = -1; written !== before;) {
    before = written;
    await new Promise((r) => setTimeout(r, 50));
  }
  try {
    expect(written).toBeLessThan(100); // a few stream buffers' worth, not 1024 lines
  } finally {
    // Then every line still arrives, in order.
    let count = 1;
    for await (const e of events) {
      count++;
      expect(e.position).toBe(count);
    }
    expect(count).toBe(2000);
  }
});
