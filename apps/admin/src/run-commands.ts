import { choiceFlag, UsageError } from '@creditlab/cli';
import { adminCommand } from './admin-command';

export const finishRun = adminCommand({
  name: 'finish-run',
  line: 'finishes a run whose trainer died (it stays "running" otherwise)',
  synopsis: 'RUN --status failed|aborted|completed [--reason T] [options]',
  summary:
    'Appends a run.finished event to a run that is still running because its trainer was killed or lost its server, so that it shows as finished. A write key of its project is enough.',
  flags: {
    status: {
      type: 'string',
      value: 'S',
      help: 'failed, aborted or completed',
      byDefault: 'none: required',
    },
    reason: {
      type: 'string',
      value: 'T',
      help: "why, kept in the run's summary",
      byDefault: 'none',
    },
  },
  positionals: ['RUN'],
  examples: [
    'npm run admin -- finish-run 3f0c2a9e-5b1d-4c1e-9a51-0d6c1f2b7e44 --status failed --reason "node lost"',
  ],
  async run(client, values, [runId]) {
    const status = choiceFlag('status', values.status, ['failed', 'aborted', 'completed'] as const);
    if (!status) throw new UsageError('finish-run needs --status failed|aborted|completed');
    const summary = {
      finishedBy: 'npm run admin -- finish-run',
      ...(values.reason === undefined ? {} : { reason: values.reason }),
    };
    const { finishRun } = await client().graphql<{
      finishRun: { id: string; status: string; finishedAt: string };
    }>(
      'mutation($id: ID!, $s: RunFinishStatus!, $summary: JSON) { finishRun(runId: $id, status: $s, summary: $summary) { id status finishedAt summary } }',
      { id: runId, s: status.toUpperCase(), summary }, // the API's enum names are in capitals
      { idempotent: true },
    );
    return {
      json: finishRun,
      text: `run ${finishRun.id} marked ${finishRun.status.toLowerCase()} at ${finishRun.finishedAt}`,
    };
  },
});
