/** Commits a partition's next offset to the consumer group; rejects when the commit failed. */
export type CommitOffsets = (offsets: { partition: number; offset: string }[]) => Promise<void>;

/**
 * The offsets a Kafka consumer has applied, committed to its group off the batch path.
 *
 * One commit at a time: kafkajs retries a commit for up to a minute while the broker is away,
 * and a commit started earlier that lands later would move the group's offset back, leaving a
 * lag that no later batch clears once the partition is quiet. So `flush` does nothing while a
 * commit is in flight, and the commits land in the order they were made. A failed commit's
 * offsets are kept for the next flush, unless newer ones came meanwhile or a rebalance took the
 * partition away (its new holder commits it; ours would move its offset back).
 *
 * No "already committed" filter: kafkajs answers a commit made while its consumer restarts
 * without sending it, so a batch delivered again after the restart must be able to note (and
 * commit) the same offset again.
 */
export class OffsetCommitter {
  private readonly pending = new Map<number, bigint>();
  private inFlight: Promise<void> | null = null;
  /** The partitions the group last assigned us (null until the first assignment is known). */
  private held: Set<number> | null = null;

  constructor(private readonly commit: CommitOffsets, private readonly onError: (error: unknown) => void = () => undefined) {}

  /** The next offset to read on `partition` (last applied + 1); one below the offset already pending is ignored. */
  note(partition: number, nextOffset: string): void {
    const offset = BigInt(nextOffset);
    if (offset > (this.pending.get(partition) ?? -1n)) this.pending.set(partition, offset);
  }

  /** Partitions this consumer no longer holds (a rebalance): their offsets are another member's to commit. */
  keepOnly(partitions: Iterable<number>): void {
    this.held = new Set(partitions);
    for (const partition of [...this.pending.keys()]) if (!this.held.has(partition)) this.pending.delete(partition);
  }

  /** Offsets noted and not yet committed, by partition (what the tests look at). */
  uncommitted(): Record<number, string> {
    return Object.fromEntries([...this.pending].map(([partition, offset]) => [partition, offset.toString()]));
  }

  /** Starts a commit of what is pending unless one is in flight; resolves when the commit it started (if any) ended. */
  flush(): Promise<void> {
    if (this.inFlight || this.pending.size === 0) return this.inFlight ?? Promise.resolve();
    const batch = [...this.pending].sort(([a], [b]) => a - b);
    this.pending.clear();
    this.inFlight = this.commit(batch.map(([partition, offset]) => ({ partition, offset: offset.toString() })))
      .then(() => undefined, (error) => {
        for (const [partition, offset] of batch) {
          if (!this.pending.has(partition) && (this.held?.has(partition) ?? true)) this.pending.set(partition, offset);
        }
        this.onError(error);
      })
      .finally(() => {
        this.inFlight = null;
      });
    return this.inFlight;
  }

  /** Waits for the commit in flight, then commits what is still pending (at stop). */
  async drain(): Promise<void> {
    await this.inFlight;
    await this.flush();
  }
}
