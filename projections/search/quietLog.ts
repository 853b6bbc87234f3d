import type { EventStore } from '../../services/shared/eventStore';

/**
 * Whether the log has been still for `quietMs`: its head sampled at most every `sampleMs`, in the
 * background (the answer never waits: it is the last sample's), and moved on by what the caller
 * saw itself (`saw`). A head that cannot be read counts as moving.
 */
export class QuietLog {
  private head: bigint | null = null;
  private since = 0;
  private sampledAt = Number.NEGATIVE_INFINITY;
  private sampling = false;

  constructor(
    private readonly store: Pick<EventStore, 'headPosition'>,
    private readonly quietMs: number,
    private readonly sampleMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** A position the log holds (a batch just read): a head past the last one seen is a move. */
  saw(position: string): void {
    this.moved(BigInt(position));
  }

  isQuiet(): boolean {
    const now = this.now();
    if (!this.sampling && now - this.sampledAt >= this.sampleMs) this.sample();
    return this.head !== null && now - this.since >= this.quietMs;
  }

  private sample(): void {
    this.sampling = true;
    this.store.headPosition().then((head) => this.moved(BigInt(head)), () => {
      this.head = null;
    }).finally(() => {
      this.sampledAt = this.now();
      this.sampling = false;
    });
  }

  private moved(head: bigint): void {
    if (this.head === null || head > this.head) {
      this.head = head;
      this.since = this.now();
    }
  }
}
