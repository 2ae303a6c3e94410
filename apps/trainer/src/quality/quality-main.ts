import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { helpText, parseCommandLine, reportUsageError, UsageError } from '@creditlab/cli';
import { QUALITY_COMMAND, qualityPlan } from './quality-command';
import { writeQualityReport } from './quality-report';
import { runQuality, type QualityResult } from './quality-run';

/**
 * `npm run quality`: every estimator against the exact truth on frozen snapshots, in process (see
 * --help). Each environment's figures are kept in `<out>/data/estimator-quality-<env>.json` as soon as
 * they are measured, so an interrupted run resumes with the next environment.
 */
async function main(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof qualityPlan>;
  try {
    const line = parseCommandLine(QUALITY_COMMAND, argv);
    if (line.help) {
      process.stdout.write(helpText(QUALITY_COMMAND));
      return 0;
    }
    parsed = qualityPlan(line.values);
  } catch (e) {
    if (e instanceof UsageError) return reportUsageError('quality', e);
    throw e;
  }
  const { plan, outDir, force } = parsed;
  const command = `npm run quality -- ${argv.join(' ')}`.trim();
  for (const env of plan.envs) {
    const dataFile = path.join(outDir, 'data', `estimator-quality-${env}.json`);
    let result: QualityResult;
    if (existsSync(dataFile) && !force) {
      result = JSON.parse(readFileSync(dataFile, 'utf8')) as QualityResult;
      process.stderr.write(`${env}: kept figures from ${dataFile}\n`);
    } else {
      result = await runQuality(plan, env, (line) => process.stderr.write(`${line}\n`));
      mkdirSync(path.dirname(dataFile), { recursive: true });
      writeFileSync(dataFile, `${JSON.stringify(result)}\n`);
    }
    const file = writeQualityReport(plan, result, outDir, command);
    process.stderr.write(`wrote ${env}'s section of ${file}\n`);
  }
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`quality: ${(e as Error).message}\n`);
    process.exit(1);
  },
);
