import { spawn, type ChildProcess } from 'node:child_process';
import { describeExit, exitOf, OutputTail, type Exit } from './child-process-output';
import { POSTGRES_ENV, type ClusterOptions } from './initdb';

export interface PostmasterOptions extends ClusterOptions {
  port: number;
  /** Where it also listens on a Unix socket, or undefined for TCP only. */
  socketDir?: string;
  /** Server settings given on its command line (`-c name=value`), e.g. a preloaded library. */
  settings?: Readonly<Record<string, string>>;
}

/** What PostgreSQL says once it takes connections: all, or read-only ones (a hot standby's data directory). */
const READY = /database system is ready to accept (read-only )?connections/;
const READY_WITHIN_MS = 600_000;

/** One running PostgreSQL server process (the postmaster) that this process started. */
export class Postmaster {
  /** Resolves when it ends, however that happens. */
  readonly exited: Promise<Exit>;
  private stopping: Promise<void> | undefined;

  private constructor(
    private readonly child: ChildProcess,
    private readonly tail: OutputTail,
  ) {
    this.exited = exitOf(child).catch(() => ({ code: null, signal: null }));
    // If this process dies of an error, its PostgreSQL should not outlive it.
    const onExit = () => child.kill('SIGINT');
    process.once('exit', onExit);
    void this.exited.then(() => process.removeListener('exit', onExit));
  }

  get pid(): number {
    return this.child.pid as number;
  }

  /** Its last lines of output (for a message saying why it stopped). */
  lastLines(): string[] {
    return this.tail.last();
  }

  /**
   * Starts PostgreSQL on an initialised data directory and resolves once it accepts connections.
   * It runs in a process group of its own, so that a Ctrl-C meant for the server (which then
   * lets its requests finish) does not stop the database under it.
   */
  static async start(options: PostmasterOptions): Promise<Postmaster> {
    const child = spawn(
      options.binaries.postgres,
      [
        ...['-D', options.dataDir, '-p', String(options.port), '-c', 'listen_addresses=localhost'],
        ...['-c', `unix_socket_directories=${options.socketDir ?? ''}`],
        ...Object.entries(options.settings ?? {}).flatMap(([name, value]) => [
          '-c',
          `${name}=${value}`,
        ]),
      ],
      { ...options.user, env: POSTGRES_ENV, stdio: ['ignore', 'ignore', 'pipe'], detached: true },
    );
    let ready: () => void = () => undefined;
    const isReady = new Promise<void>((resolve) => (ready = resolve));
    const tail = new OutputTail(child, (line) => {
      options.onLog?.(line);
      if (READY.test(line)) ready();
    });
    const postmaster = new Postmaster(child, tail);
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      isReady.then(() => 'ready' as const),
      exitOf(child),
      // Crash recovery replays the WAL since the last checkpoint: minutes at most.
      new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), READY_WITHIN_MS))),
    ]).finally(() => clearTimeout(timer));
    if (outcome === 'ready') return postmaster;
    if (outcome === 'late') {
      await postmaster.stop();
      throw new PostmasterStartError(
        `was not ready after ${READY_WITHIN_MS / 1000} s`,
        tail.last(),
      );
    }
    throw new PostmasterStartError(
      `${describeExit(outcome)} before it accepted connections`,
      tail.last(),
    );
  }

  /** Fast shutdown (open sessions are rolled back), harder if it lingers; resolves once it ended. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      for (const [signal, ms] of [
        ['SIGINT', 60_000],
        ['SIGQUIT', 10_000],
        ['SIGKILL', 10_000],
      ] as const) {
        if (this.child.exitCode !== null || this.child.signalCode !== null) return;
        this.child.kill(signal);
        const timer = new Promise<'late'>((r) => setTimeout(() => r('late'), ms).unref());
        if ((await Promise.race([this.exited, timer])) !== 'late') return;
      }
    })();
    return this.stopping;
  }
}

/** PostgreSQL ended before it was ready; `lines` are its last words. */
export class PostmasterStartError extends Error {
  constructor(
    readonly exit: string,
    readonly lines: string[],
  ) {
    super(`PostgreSQL ${exit}: ${lines.slice(-3).join(' | ') || 'it printed nothing'}`);
  }
}
