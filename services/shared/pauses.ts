/**
 * The pauses of a loop that retries or polls, which its stop() must be able to end at once.
 * `wakeAll()` ends the pauses under way (a poller's "look now"); `close()` ends them and every pause
 * asked for afterwards, so a loop that was between an await and its next pause when stop() ran does
 * not sleep out its back-off after all.
 */
export class Pauses {
  private readonly sleepers = new Set<() => void>();
  private closed = false;

  /** Resolves after `ms`, or sooner on wakeAll()/close(); at once once closed. */
  sleep(ms: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.sleepers.add(wake);
    });
  }

  /** Ends every pause under way; later pauses sleep as asked. */
  wakeAll(): void {
    for (const wake of [...this.sleepers]) wake();
  }

  /** Ends every pause under way and every later one: the loop is stopping. */
  close(): void {
    this.closed = true;
    this.wakeAll();
  }
}
