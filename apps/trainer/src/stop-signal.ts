/**
 * Ctrl-C (SIGINT) and SIGTERM for a command that trains: the first asks the trainer to stop after
 * the current iteration, which finishes the run as aborted; a second exits at once and says how to
 * finish the run it leaves running.
 */
export function stopOnSignal(command: string): {
  requested(): boolean;
  /** The run being trained, named if a second signal leaves it running. */
  current: string | undefined;
} {
  const state = { stop: false, current: undefined as string | undefined };
  const onSignal = () => {
    if (!state.stop) {
      state.stop = true;
      process.stderr.write(
        `\n${command}: stopping after this iteration; the run will be marked aborted (again to quit now)\n`,
      );
      return;
    }
    process.stderr.write(
      state.current
        ? `${command}: quit; run ${state.current} stays "running" until \`npm run admin -- finish-run ${state.current} --status aborted\`\n`
        : `${command}: quit\n`,
    );
    process.exit(130);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    requested: () => state.stop,
    get current() {
      return state.current;
    },
    set current(runId) {
      state.current = runId;
    },
  };
}

/** Whether an error is a refused connection: no server listening there. */
export function connectionRefused(e: unknown): boolean {
  return (e as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED';
}
