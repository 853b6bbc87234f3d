import type { Logger } from 'pino';

/**
 * Runs the stoppers in order on SIGTERM/SIGINT, once; exits 0 when all are done. The function
 * returned does the same for another reason (a role that failed for good) with its exit code.
 */
export function onShutdown(logger: Logger, stoppers: (() => Promise<unknown>)[]): (reason: string, exitCode: number) => Promise<void> {
  let stopping = false;
  const stop = async (signal: string, exitCode = 0) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    for (const s of stoppers) await s().catch((err) => logger.error({ err }, 'error during shutdown'));
    logger.info('stopped');
    process.exit(exitCode);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  return stop;
}
