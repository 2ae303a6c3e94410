import { newEventId, type CreditlabClient } from '@creditlab/client';

export type EndStatus = 'completed' | 'aborted';

/**
 * Runs the body of a run that was just created and records how it ended as its `run.finished`
 * event: `completed` or `aborted` (the trainer was asked to stop) as the body says, and `failed`,
 * with the error's message, on any error, which is then rethrown. So a trainer that stops, for
 * whatever reason, never leaves its run `running`; only one killed outright, or one whose server is
 * gone, does, and `npm run admin -- finish-run` closes that.
 */
export async function recordEnding(
  client: Pick<CreditlabClient, 'appendEvents'>,
  runId: string,
  run: { body: () => Promise<EndStatus>; summary: () => Record<string, unknown> },
): Promise<EndStatus> {
  let status: EndStatus;
  try {
    status = await run.body();
  } catch (e) {
    const error = e instanceof Error ? e : new Error(String(e));
    await finish(client, runId, 'failed', { ...run.summary(), error: error.message }).catch(
      (f: unknown) => {
        error.message += `; ${stillRunning(runId, 'failed', f)}`;
      },
    );
    throw error;
  }
  await finish(client, runId, status, run.summary()).catch((f: unknown) => {
    throw new Error(stillRunning(runId, status, f), { cause: f });
  });
  return status;
}

function finish(
  client: Pick<CreditlabClient, 'appendEvents'>,
  runId: string,
  status: EndStatus | 'failed',
  summary: Record<string, unknown>,
) {
  return client.appendEvents(runId, [
    { id: newEventId(), type: 'run.finished', data: { status, summary } },
  ]);
}

function stillRunning(runId: string, status: string, cause: unknown): string {
  return `run ${runId} could not be marked ${status} (${(cause as Error).message}); it stays "running" until \`npm run admin -- finish-run ${runId} --status ${status}\``;
}
