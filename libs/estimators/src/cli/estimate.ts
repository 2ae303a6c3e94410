import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { columnarBatchFromJson, parseJsonText } from '../batch/read-rollout-batch';
import { EstimatorInputError } from '../errors';
import { toAdvantagesDocument } from '../output/advantages-json';
import { parseParamText } from '../registry/param-schema';
import { estimate, getMethod } from '../registry/registry';
import { registryAsJson, registryAsText } from './describe-registry';

export const USAGE = `usage: npm run -s estimate -- --method NAME [--param key=value ...] [--input batch.json] [options]
       npm run -s estimate -- --list [--json]

Reads a rollout-batch/v1 JSON document (from --input, else stdin) and prints the
advantages/v1 JSON of one estimator on stdout.

options:
  -m, --method NAME      estimator, see --list (default: none, required unless --list)
  -p, --param key=value  estimator parameter; repeat for several (default: the method's defaults, see --list)
  -i, --input FILE       read the batch from FILE (default: stdin)
  --no-diagnostics       leave per-step diagnostics out of the output (default: off, diagnostics included)
  --pretty               indent the JSON output (default: off)
  --timing               one line on stderr: ms reading+parsing, building the columnar batch, estimating (default: off)
  --list                 print the estimators with their parameters (default: off)
  --json                 with --list: print them as JSON (default: off)
  -h, --help             print this help (default: off)

examples:
  npm run -s estimate -- --method gigpo --param gamma=0.9 --input examples/get-the-key.json --pretty
  cat examples/get-the-key.json | npm run -s estimate -- --method grpo --no-diagnostics
  npm run -s estimate -- --list

exit status: 0 on success, 2 for bad input or usage (one line on stderr, nothing on stdout).`;

export interface CliIo {
  readStdin(): Promise<string>;
  stdout(text: string): void;
  stderr(text: string): void;
}

class UsageError extends Error {}

/** Runs the `estimate` command; returns its exit status. Never throws for bad input. */
export async function runEstimateCli(argv: string[], io: CliIo): Promise<number> {
  try {
    const opts = parseOptions(argv);
    if (opts.help) {
      io.stdout(`${USAGE}\n`);
      return 0;
    }
    if (opts.list) {
      io.stdout(opts.json ? `${JSON.stringify(registryAsJson(), null, 2)}\n` : registryAsText());
      return 0;
    }
    if (!opts.method)
      throw new UsageError('--method is required (or --list to see the estimators)');
    const params = parseParamFlags(opts.method, opts.param ?? []);

    const t0 = performance.now();
    const text = opts.input === undefined ? await io.readStdin() : await readInput(opts.input);
    const doc = parseJsonText(text);
    const t1 = performance.now();
    const batch = columnarBatchFromJson(doc);
    const t2 = performance.now();
    const result = estimate(batch, opts.method, params);
    const t3 = performance.now();

    const output = toAdvantagesDocument(batch, result, { diagnostics: !opts['no-diagnostics'] });
    io.stdout(`${JSON.stringify(output, null, opts.pretty ? 2 : undefined)}\n`);
    if (opts.timing) {
      io.stderr(
        `timing: read+parse ${ms(t1 - t0)} ms, columnar ${ms(t2 - t1)} ms, estimate ${ms(t3 - t2)} ms ` +
          `(${batch.stepCount} steps, ${opts.method})\n`,
      );
    }
    return 0;
  } catch (e) {
    if (e instanceof EstimatorInputError || e instanceof UsageError) {
      const hint = e instanceof UsageError ? ' (see npm run estimate -- --help)' : '';
      io.stderr(`estimate: ${e.message.replace(/\s*\n\s*/g, ' ')}${hint}\n`);
      return 2;
    }
    throw e;
  }
}

function parseOptions(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        method: { type: 'string', short: 'm' },
        param: { type: 'string', short: 'p', multiple: true },
        input: { type: 'string', short: 'i' },
        list: { type: 'boolean' },
        json: { type: 'boolean' },
        timing: { type: 'boolean' },
        pretty: { type: 'boolean' },
        'no-diagnostics': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (e) {
    // Node's message may carry advice on further lines; the first says what is wrong.
    throw new UsageError((e as Error).message.split('\n')[0] ?? '');
  }
}

/** `key=value` flags → typed values, using the method's schema to tell numbers from strings. */
function parseParamFlags(method: string, flags: string[]): Record<string, unknown> {
  const schema = getMethod(method).params;
  const params: Record<string, unknown> = {};
  for (const flag of flags) {
    const eq = flag.indexOf('=');
    if (eq <= 0) throw new UsageError(`--param expects key=value, got ${JSON.stringify(flag)}`);
    const key = flag.slice(0, eq);
    params[key] = parseParamText(schema, key, flag.slice(eq + 1));
  }
  return params;
}

async function readInput(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    throw new UsageError(
      `cannot read --input ${JSON.stringify(path)}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    );
  }
}

const ms = (x: number) => x.toFixed(1);
