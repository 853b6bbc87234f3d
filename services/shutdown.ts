import type { Logger } from 'pino';

/** Runs the stoppers in order on SIGTERM/SIGINT, once; exits 0 when all are done. */
export function onShutdown(logger: Logger, stoppers: (() => Promise<unknown>)[]): void {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    for (const s of stoppers) await s().catch((err) => logger.error({ err }, 'error during shutdown'));
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}
