// The ingest's second thread (prepare-thread.ts): parses and checks the lines it is sent and
// answers with each one's prepared event, or why it was refused; packs the iterations it is sent.
import { parentPort } from 'node:worker_threads';
import { packJobs } from '../advantages/in-hand-packing';
import { prepareLine } from './prepare-event';
import type { PrepareReply, PrepareRequest } from './prepare-thread';

const port = parentPort;
if (!port) throw new Error('prepare-thread-entry runs as a worker thread (prepare-thread.ts)');

port.on('message', (request: PrepareRequest) => {
  const reply: PrepareReply =
    'lines' in request
      ? {
          id: request.id,
          lines: request.lines.map((l) => prepareLine(l.position, l.text, request.from)),
        }
      : { id: request.id, packed: packJobs(request.jobs) };
  port.postMessage(reply);
});
