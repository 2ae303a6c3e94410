// The ingest's preparing thread (prepare-thread.ts): parses and checks the lines it is sent and
// answers with each one's prepared event, or why it was refused.
import { parentPort } from 'node:worker_threads';
import { checkEvent } from './prepare-event';
import type { PreparedLine, PrepareReply, PrepareRequest } from './prepare-thread';

const port = parentPort;
if (!port) throw new Error('prepare-thread-entry runs as a worker thread (prepare-thread.ts)');

port.on('message', ({ id, from, lines }: PrepareRequest) => {
  const reply: PrepareReply = {
    id,
    lines: lines.map((l) => prepareLine(l.position, l.text, from)),
  };
  port.postMessage(reply);
});

function prepareLine(
  position: number,
  text: string | null,
  from: 'client' | 'server',
): PreparedLine {
  if (text === null) return { position, notUtf8: true };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { position, notJson: (e as Error).message };
  }
  try {
    const checked = checkEvent(position, value, from);
    return 'reason' in checked ? { position, ...checked } : checked;
  } catch (e) {
    // A bug, not the client's: answered 500 by the request, not by a lost thread.
    return { position, failed: e instanceof Error ? (e.stack ?? e.message) : String(e) };
  }
}
