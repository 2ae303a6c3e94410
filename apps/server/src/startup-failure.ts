import { EmbeddedPostgresError } from '@creditlab/db';
import { ConfigError, type AppConfig } from './config/app-config';
import { isDatabaseUnavailable } from './errors/database-errors';

/**
 * Why the server could not start, as one paragraph for the terminal — never a stack trace (set
 * LOG_LEVEL=debug to get one) — and the exit status: 2 for a bad configuration, else 1.
 */
export function startupFailure(
  e: unknown,
  config: AppConfig | undefined,
): { message: string; status: number } {
  if (e instanceof ConfigError) return { message: e.message, status: 2 };
  const reason = e instanceof Error ? e.message : e === undefined ? 'no reason given' : String(e);
  let message: string;
  if (e instanceof EmbeddedPostgresError) message = e.message;
  else if ((e as NodeJS.ErrnoException | undefined)?.code === 'EADDRINUSE' && config)
    message = `Creditlab could not start: ${config.host}:${config.port} is in use by another program (${reason}). Set PORT (and HOST) to a free address, or stop the other program.`;
  else if (isDatabaseUnavailable(e))
    message = `Creditlab could not start: the database cannot be reached (${reason}). ${
      config?.databaseUrl
        ? 'Check DATABASE_URL and that its PostgreSQL is running.'
        : 'The embedded PostgreSQL stopped during start-up; start again, and see the lines above.'
    }`;
  else message = `Creditlab could not start: ${reason}.`;
  const stack = /^(debug|verbose)$/.test(process.env.LOG_LEVEL ?? '') && (e as Error)?.stack;
  return {
    message: stack ? `${oneParagraph(message)}\n${stack}` : oneParagraph(message),
    status: 1,
  };
}

const oneParagraph = (s: string) => s.replace(/\s*\n\s*/g, ' ').replace(/\.\.$/, '.');
