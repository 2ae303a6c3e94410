import { type CreditlabClient } from '@creditlab/client';
import {
  CONNECTION_FLAGS,
  parseCommandLine,
  type Command,
  type Flag,
  type FlagValues,
} from '@creditlab/cli';

/** What a command prints: JSON for --json, else lines for a person. */
export interface CommandOutput {
  json: unknown;
  text: string;
}

/** Flags every command that talks to the server takes. */
export const SERVER_FLAGS = {
  ...CONNECTION_FLAGS,
  json: { type: 'boolean', help: 'print JSON instead of text', byDefault: 'off' },
} as const satisfies Record<string, Flag>;

type ServerFlags = typeof SERVER_FLAGS;

/** One `npm run admin -- <name>` command: its own flags (and help), and what it does. */
export interface AdminCommand {
  name: string;
  /** One line for the list of commands. */
  line: string;
  spec: Command<Record<string, Flag>>;
  /** Parses `argv` (after the command's name); null when it asked for its help. */
  parse(argv: string[]): ParsedAdminCommand | null;
}

export interface ParsedAdminCommand {
  connection: { url?: string; apiKey?: string };
  json: boolean;
  run(client: () => CreditlabClient): Promise<CommandOutput>;
}

/**
 * Declares a command: flags checked strictly by `parseArgs`, the server flags added, its help from
 * the same table. `run` gets the client lazily, so a command that needs no server (`env`) makes none.
 */
export function adminCommand<F extends Record<string, Flag>>(definition: {
  name: string;
  line: string;
  synopsis: string;
  summary: string;
  flags: F;
  positionals?: string[];
  examples: string[];
  run(
    client: () => CreditlabClient,
    values: FlagValues<F & ServerFlags>,
    positionals: string[],
  ): Promise<CommandOutput>;
}): AdminCommand {
  const spec: Command<F & ServerFlags> = {
    invocation: `npm run admin -- ${definition.name}`,
    name: `admin ${definition.name}`,
    synopsis: [definition.synopsis],
    summary: definition.summary,
    flags: { ...definition.flags, ...SERVER_FLAGS },
    positionals: definition.positionals,
    examples: definition.examples,
    notes:
      'exit status: 0 done, 1 the server failed or is unreachable, 2 a mistake (usage, or the server refused)',
  };
  return {
    name: definition.name,
    line: definition.line,
    spec: spec as unknown as Command<Record<string, Flag>>,
    parse(argv) {
      const parsed = parseCommandLine(spec, argv);
      if (parsed.help) return null;
      const { values, positionals } = parsed;
      return {
        connection: {
          url: values.server as string | undefined,
          apiKey: values.key as string | undefined,
        },
        json: values.json === true,
        run: (client) => definition.run(client, values, positionals),
      };
    },
  };
}

export function table(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, c) => Math.max(...all.map((r) => (r[c] ?? '').length)));
  return all
    .map((r) =>
      r
        .map((v, c) => v.padEnd(widths[c] as number))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
