// The ingest's preparing thread (prepare-thread.ts): parses and checks the lines it is sent and
// answers with each one's prepared event, or why it was refused.
import { parentPort } from 'node:worker_threads';
import { prepareLine } from './prepare-event';
import type { PrepareReply, PrepareRequest } from './prepare-thread';

const port = parentPort;
if (!port) throw new Error('prepare-thread-entry runs as a worker thread (prepare-thread.ts)');

port.on('message', ({ id, from, lines }: PrepareRequest) => {
  const reply: PrepareReply = {
    id,
    lines: lines.map((l) => prepareLine(l.position, l.text, from)),
  };
  port.postMessage(reply);
});
