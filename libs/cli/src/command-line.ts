import { parseArgs } from 'node:util';

/**
 * Command lines of the tools built on the client (trainer, experiment, admin, db:migrate): flags
 * are parsed by node:util `parseArgs` in strict mode, and the same table that declares them
 * writes `--help`, so the help never misses a flag or its default.
 */

/** A mistake on the command line: the command prints `<name>: <message>` on one line and exits 2. */
export class UsageError extends Error {}

export interface Flag {
  type: 'string' | 'boolean';
  multiple?: boolean;
  short?: string;
  /** The value's placeholder in the help: `--iterations N`. */
  value?: string;
  /** What the flag does. */
  help: string;
  /** What happens without it, as the help says it. */
  byDefault: string;
}

export interface Command<F extends Record<string, Flag>> {
  /** How a user runs it, e.g. `npm run train --`. */
  invocation: string;
  /** Prefix of its error lines, e.g. `train`. */
  name: string;
  /** Usage lines after the invocation, e.g. `--fork RUN [--from-checkpoint K] [options]`. */
  synopsis: string[];
  /** What it does, one paragraph. */
  summary: string;
  flags: F;
  /** Positional arguments it takes, by name (e.g. ['RUN']); none if absent. */
  positionals?: string[];
  examples: string[];
  /** Anything else worth saying (exit statuses, environment variables). */
  notes?: string;
}

type FlagValue<F extends Flag> = F['type'] extends 'boolean'
  ? F['multiple'] extends true
    ? boolean[]
    : boolean
  : F['multiple'] extends true
    ? string[]
    : string;

/** The flags given (absent ones are undefined: defaults are the command's to apply). */
export type FlagValues<F extends Record<string, Flag>> = { [K in keyof F]?: FlagValue<F[K]> };

export type CommandLine<F extends Record<string, Flag>> =
  { help: true } | { help: false; values: FlagValues<F>; positionals: string[] };

const HELP_FLAG: Flag = { type: 'boolean', short: 'h', help: 'print this help', byDefault: 'off' };

/** Parses `argv` strictly; `--help`/`-h` anywhere asks for the help. Throws UsageError. */
export function parseCommandLine<F extends Record<string, Flag>>(
  command: Command<F>,
  argv: string[],
): CommandLine<F> {
  const options = Object.fromEntries(
    Object.entries({ ...command.flags, help: HELP_FLAG }).map(([name, f]) => [
      name,
      { type: f.type, multiple: f.multiple ?? false, ...(f.short ? { short: f.short } : {}) },
    ]),
  );
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: argv,
      options,
      strict: true,
      allowPositionals: (command.positionals?.length ?? 0) > 0,
    });
  } catch (e) {
    // Node's messages carry advice on further lines; the first says what is wrong.
    const first = ((e as Error).message.split('\n')[0] ?? '').replace(/\. This command .*$/, '');
    throw new UsageError(`${first} (see ${command.invocation} --help)`);
  }
  if (parsed.values.help) return { help: true };
  const expected = command.positionals ?? [];
  if (parsed.positionals.length !== expected.length) {
    throw new UsageError(
      expected.length === 0
        ? `unexpected argument ${JSON.stringify(parsed.positionals[0])}`
        : `expected ${expected.join(' ')}, got ${parsed.positionals.length ? parsed.positionals.map((p) => JSON.stringify(p)).join(' ') : 'nothing'} (see ${command.invocation} --help)`,
    );
  }
  return {
    help: false,
    values: parsed.values as FlagValues<F>,
    positionals: parsed.positionals,
  };
}

/** The help: usage, what it does, every flag with its default, examples. */
export function helpText<F extends Record<string, Flag>>(command: Command<F>): string {
  const rows = Object.entries({ ...command.flags, help: HELP_FLAG }).map(([name, f]) => [
    `${f.short ? `-${f.short}, ` : ''}--${name}${f.value ? ` ${f.value}` : ''}`,
    `${f.help} (default: ${f.byDefault})`,
  ]);
  const width = Math.max(...rows.map(([left]) => (left as string).length));
  const [first, ...rest] = command.synopsis;
  return [
    `usage: ${command.invocation} ${first ?? ''}`.trimEnd(),
    ...rest.map((s) => `       ${command.invocation} ${s}`),
    '',
    command.summary,
    '',
    'options:',
    ...rows.map(([left, right]) => `  ${(left as string).padEnd(width)}  ${right}`),
    '',
    'examples:',
    ...command.examples.map((e) => `  ${e}`),
    ...(command.notes ? ['', command.notes] : []),
    '',
  ].join('\n');
}

/** A whole number flag ≥ `min`, or undefined when absent. */
export function integerFlag(name: string, text: string | undefined, min = 0): number | undefined {
  if (text === undefined) return undefined;
  const value = /^-?\d+$/.test(text.trim()) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value) || value < min)
    throw new UsageError(`--${name}: a whole number ≥ ${min}, got ${JSON.stringify(text)}`);
  return value;
}

/** One of `allowed`, or undefined when absent. */
export function choiceFlag<T extends string>(
  name: string,
  text: string | undefined,
  allowed: readonly T[],
): T | undefined {
  if (text === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(text))
    throw new UsageError(`--${name}: one of ${allowed.join(', ')}, got ${JSON.stringify(text)}`);
  return text as T;
}

/** Flags that must not be given together with `flag` (they would be ignored). */
export function refuseWith(
  flag: string,
  values: Record<string, unknown>,
  others: string[],
  why: string,
): void {
  const given = others.find((o) => values[o] !== undefined);
  if (given !== undefined) throw new UsageError(`--${given} cannot be used with --${flag}: ${why}`);
}

/** Writes a usage error as one line and returns exit status 2. */
export function reportUsageError(name: string, e: UsageError): number {
  process.stderr.write(`${name}: ${e.message.replace(/\s*\n\s*/g, ' ')}\n`);
  return 2;
}

/** `--server` and `--key`, as every tool resolves them (see `resolveConnection`). */
export const CONNECTION_FLAGS = {
  server: {
    type: 'string',
    value: 'URL',
    help: 'the Creditlab server',
    byDefault:
      'CREDITLAB_URL, else the url in the credentials file (CREDITLAB_CREDENTIALS, else ~/.creditlab/credentials.json), else http://127.0.0.1:4000',
  },
  key: {
    type: 'string',
    value: 'KEY',
    help: 'API key',
    byDefault:
      "CREDITLAB_API_KEY, else the credentials file's key when it was written for that server",
  },
} as const satisfies Record<string, Flag>;
