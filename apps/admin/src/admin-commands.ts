import { helpText } from '@creditlab/cli';
import type { AdminCommand } from './admin-command';
import { env } from './env-command';
import { createKey, keys, revokeKey, whoami } from './key-commands';
import { createProject, projects } from './project-commands';
import { finishRun } from './run-commands';

/** Every `npm run admin -- <command>`, in the order the help lists them. */
export const COMMANDS: AdminCommand[] = [
  whoami,
  env,
  projects,
  createProject,
  keys,
  createKey,
  revokeKey,
  finishRun,
];

export function findCommand(name: string): AdminCommand | undefined {
  return COMMANDS.find((c) => c.name === name);
}

/** `npm run admin -- --help`: the commands; each has its own `--help`. */
export function adminHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'usage: npm run admin -- <command> [options]',
    '',
    'Keys, projects and runs through the server’s GraphQL API. The server and key: --server and --key, else',
    'CREDITLAB_URL and CREDITLAB_API_KEY, else the credentials file the server wrote on its first start',
    '(CREDITLAB_CREDENTIALS, else ~/.creditlab/credentials.json).',
    '',
    'commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.line}`),
    '',
    'options of every command: see npm run admin -- <command> --help',
    '',
    'examples:',
    '  npm run admin -- create-key --project lab-a --role write --name alice',
    '  npm run admin -- create-key --help',
    '',
    'exit status: 0 done, 1 the server failed or is unreachable, 2 a mistake (usage, or the server refused)',
    '',
  ].join('\n');
}

export { helpText };
