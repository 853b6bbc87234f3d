import type { Logger } from 'pino';

/**
 * Runs the stoppers in order on SIGTERM/SIGINT, once; exits 0 when all are done. The function
 * returned does the same for another reason (a role that failed for good) with its exit code.
 *
 * Whatever a stopper waits for (a projection's statement stuck on a lock, a request that never
 * ends), the process ends within `timeoutMs` of the signal: past it, the stoppers still running
 * are named at error level and the process exits 1 (what a projection had not committed is
 * applied again after the restart: checkpoints move with the changes).
 */
export function onShutdown(logger: Logger, stoppers: { name: string; stop: () => Promise<unknown> }[], timeoutMs: number): (reason: string, exitCode: number) => Promise<void> {
  let stopping = false;
  const stop = async (signal: string, exitCode = 0) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, timeoutMs }, 'shutting down');
    const running = new Set<string>();
    setTimeout(() => {
      logger.error({ signal, timeoutMs, stillStopping: [...running] }, 'shutdown took longer than SHUTDOWN_TIMEOUT_MS; exiting now');
      process.exit(1);
    }, timeoutMs).unref();
    for (const s of stoppers) {
      running.add(s.name);
      const started = Date.now();
      await s.stop().catch((err) => logger.error({ err, role: s.name }, 'error during shutdown'));
      running.delete(s.name);
      logger.debug({ role: s.name, ms: Date.now() - started }, 'role stopped');
    }
    logger.info('stopped');
    process.exit(exitCode);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  return stop;
}
