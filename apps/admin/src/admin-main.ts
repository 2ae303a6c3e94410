import { CreditlabApiError, CreditlabClient, CreditlabGraphQLError } from '@creditlab/client';
import { helpText, reportUsageError, UsageError } from '@creditlab/cli';
import { adminHelp, COMMANDS, findCommand } from './admin-commands';

/**
 * `npm run admin -- create-key --project lab-a --role write`: keys, projects and runs, through the
 * server's GraphQL API. Exit status: 0 done, 2 a mistake of the caller (usage, or the server
 * refused: unknown project, wrong role, no key), 1 anything else (server unreachable).
 */
async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--help' || name === '-h') {
    process.stdout.write(adminHelp());
    return 0;
  }
  let client: CreditlabClient | undefined;
  try {
    if (name === undefined || name.startsWith('-'))
      throw new UsageError(
        `the command comes first: npm run admin -- <command> [options], one of ${COMMANDS.map((c) => c.name).join(', ')}`,
      );
    const command = findCommand(name);
    if (!command)
      throw new UsageError(
        `unknown command ${JSON.stringify(name)}; one of ${COMMANDS.map((c) => c.name).join(', ')}`,
      );
    const parsed = command.parse(rest);
    if (!parsed) {
      process.stdout.write(helpText(command.spec));
      return 0;
    }
    const out = await parsed.run(
      () => (client ??= CreditlabClient.connect(parsed.connection, { retries: 1 })),
    );
    process.stdout.write(parsed.json ? `${JSON.stringify(out.json, null, 2)}\n` : `${out.text}\n`);
    return 0;
  } catch (e) {
    return report(e, client?.url);
  }
}

function report(e: unknown, url: string | undefined): number {
  if (e instanceof UsageError) return reportUsageError('admin', e);
  const refused =
    (e instanceof CreditlabApiError && e.status < 500) ||
    (e instanceof CreditlabGraphQLError && !e.codes.includes('INTERNAL_SERVER_ERROR'));
  const cause = (e as { cause?: { code?: string } }).cause?.code;
  const message =
    cause === 'ECONNREFUSED'
      ? `no server at ${url} (start one with \`npm start\`, or pass --server)`
      : (e as Error).message;
  process.stderr.write(`admin: ${message.replace(/\s*\n\s*/g, ' ')}\n`);
  return refused ? 2 : 1;
}

void main(process.argv.slice(2)).then((code) => process.exit(code));
