import { runEstimateCli } from './estimate';

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

runEstimateCli(process.argv.slice(2), {
  readStdin,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
}).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`estimate: internal error: ${(e as Error).stack ?? String(e)}\n`);
    process.exitCode = 1;
  },
);
