import { CreditlabApiError, CreditlabClient, CreditlabGraphQLError } from '@creditlab/client';
import { parseArgs } from 'node:util';
import { USAGE, UsageError, runCommand } from './admin-commands';

/**
 * `npm run admin -- create-key --project lab-a --role write`: keys and projects, through the
 * server's GraphQL API with an admin key. Exit status: 0 done, 2 a mistake of the caller (usage, or
 * the server refused: unknown project, wrong role, no key), 1 anything else (server unreachable).
 */
async function main(): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        server: { type: 'string' },
        key: { type: 'string' },
        json: { type: 'boolean', default: false },
        project: { type: 'string' },
        role: { type: 'string' },
        name: { type: 'string' },
        description: { type: 'string' },
        'rate-limit': { type: 'string' },
        all: { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
    });
  } catch (e) {
    process.stderr.write(`admin: ${(e as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const [command, ...rest] = positionals;
  const client = CreditlabClient.connect(
    { url: values.server, apiKey: values.key },
    { retries: 1 },
  );
  try {
    const out = await runCommand(client, command, { positionals: rest, values });
    process.stdout.write(values.json ? `${JSON.stringify(out.json, null, 2)}\n` : `${out.text}\n`);
    return 0;
  } catch (e) {
    const refused =
      e instanceof UsageError ||
      (e instanceof CreditlabApiError && e.status < 500) ||
      (e instanceof CreditlabGraphQLError && !e.codes.includes('INTERNAL_SERVER_ERROR'));
    if (refused) {
      process.stderr.write(`admin: ${e.message}\n`);
      return 2;
    }
    const cause = (e as { cause?: { code?: string } }).cause?.code;
    process.stderr.write(
      cause === 'ECONNREFUSED'
        ? `admin: no server at ${client.url} (start one with \`npm start\`, or pass --server)\n`
        : `admin: ${(e as Error).message}\n`,
    );
    return 1;
  }
}

void main().then((code) => process.exit(code));
