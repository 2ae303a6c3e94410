import type { ChildProcess } from 'node:child_process';

/** How a child process ended. */
export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export const describeStatus = (code: number | null, signal: string | null) =>
  signal ? `was killed by ${signal}` : `exited with status ${code}`;

export const describeExit = (exit: Exit): string => describeStatus(exit.code, exit.signal);

/** Resolves when the process ends; a process that could not be started rejects. */
export const exitOf = (child: ChildProcess): Promise<Exit> =>
  new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });

/** The last lines a process wrote to stderr, for failure messages (and its log, line by line). */
export class OutputTail {
  private readonly lines: string[] = [];
  private partial = '';
  constructor(
    child: ChildProcess,
    private readonly onLine: (line: string) => void = () => undefined,
  ) {
    child.stderr?.on('data', (chunk: Buffer) => {
      const parts = (this.partial + chunk.toString('utf8')).split('\n');
      this.partial = parts.pop() ?? '';
      for (const line of parts) this.push(line);
    });
  }
  private push(line: string): void {
    if (!line.trim()) return;
    this.onLine(line);
    // "2026-01-02 03:04:05.678 UTC [123] FATAL:  ..." is kept as "FATAL: ...".
    this.lines.push(
      line.replace(/^\d{4}-\d\d-\d\d [\d:.]+ \S+ \[\d+\] /, '').replace(/:\s+/, ': '),
    );
    if (this.lines.length > 20) this.lines.shift();
  }
  last(): string[] {
    return this.partial.trim() ? [...this.lines, this.partial] : [...this.lines];
  }
}
