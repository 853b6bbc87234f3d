// The Kafka projector's offset commits: one at a time, in order, nothing lost when one fails,
// nothing committed for a partition a rebalance took away.
import { expect } from 'chai';
import { OffsetCommitter } from '../../projections/runtime/offsetCommitter';

type Offsets = { partition: number; offset: string }[];

/** A commit function whose calls the test settles one by one, in any order. */
function controlledCommits() {
  const calls: { offsets: Offsets; resolve: () => void; reject: (e: Error) => void }[] = [];
  const commit = (offsets: Offsets) => new Promise<void>((resolve, reject) => calls.push({ offsets, resolve, reject }));
  return { calls, commit };
}

describe('OffsetCommitter', () => {
  it('commits what was noted, the highest offset of each partition', async () => {
    const { calls, commit } = controlledCommits();
    const committer = new OffsetCommitter(commit);
    committer.note(0, '10');
    committer.note(0, '25');
    committer.note(1, '7');
    committer.note(0, '12');
    const done = committer.flush();
    expect(calls.map((c) => c.offsets)).to.deep.equal([[{ partition: 0, offset: '25' }, { partition: 1, offset: '7' }]]);
    calls[0].resolve();
    await done;
    expect(committer.uncommitted()).to.deep.equal({});
  });

  it('starts no second commit while one is in flight, so an earlier commit can never land after a later one', async () => {
    const { calls, commit } = controlledCommits();
    const committer = new OffsetCommitter(commit);
    committer.note(0, '100');
    const first = committer.flush();
    committer.note(0, '150');
    void committer.flush();
    void committer.flush();
    expect(calls).to.have.length(1);
    expect(committer.uncommitted()).to.deep.equal({ 0: '150' });

    calls[0].resolve();
    await first;
    const second = committer.flush();
    expect(calls.map((c) => c.offsets)).to.deep.equal([[{ partition: 0, offset: '100' }], [{ partition: 0, offset: '150' }]]);
    calls[1].resolve();
    await second;
    expect(committer.uncommitted()).to.deep.equal({});
  });

  it('keeps a failed commit for the next flush, unless a newer offset was noted meanwhile', async () => {
    const { calls, commit } = controlledCommits();
    const errors: unknown[] = [];
    const committer = new OffsetCommitter(commit, (e) => errors.push(e));
    committer.note(0, '100');
    committer.note(1, '40');
    const first = committer.flush();
    committer.note(1, '60');
    calls[0].reject(new Error('broker away'));
    await first;
    expect(errors.map((e) => (e as Error).message)).to.deep.equal(['broker away']);
    expect(committer.uncommitted()).to.deep.equal({ 0: '100', 1: '60' });

    const again = committer.flush();
    expect(calls[1].offsets).to.deep.equal([{ partition: 0, offset: '100' }, { partition: 1, offset: '60' }]);
    calls[1].resolve();
    await again;
    expect(committer.uncommitted()).to.deep.equal({});
  });

  it('drops offsets of partitions a rebalance took away, also those of a commit that failed meanwhile', async () => {
    const { calls, commit } = controlledCommits();
    const committer = new OffsetCommitter(commit);
    committer.note(0, '10');
    committer.note(1, '20');
    const first = committer.flush();
    committer.note(2, '30');
    committer.keepOnly([1]);
    expect(committer.uncommitted()).to.deep.equal({});
    calls[0].reject(new Error('illegal generation'));
    await first;
    expect(committer.uncommitted()).to.deep.equal({ 1: '20' });
  });

  it('lets a batch delivered again after a restart commit the same offset again', async () => {
    const { calls, commit } = controlledCommits();
    const committer = new OffsetCommitter(commit);
    committer.note(3, '50');
    const first = committer.flush();
    calls[0].resolve();
    await first;
    committer.note(3, '50');
    void committer.flush();
    expect(calls[1].offsets).to.deep.equal([{ partition: 3, offset: '50' }]);
  });

  it('drain waits for the commit in flight, then commits what is still pending', async () => {
    const { calls, commit } = controlledCommits();
    const committer = new OffsetCommitter(commit);
    committer.note(0, '5');
    void committer.flush();
    committer.note(0, '9');
    const drained = committer.drain();
    calls[0].resolve();
    await new Promise((r) => setImmediate(r));
    expect(calls.map((c) => c.offsets)).to.deep.equal([[{ partition: 0, offset: '5' }], [{ partition: 0, offset: '9' }]]);
    calls[1].resolve();
    await drained;
    expect(committer.uncommitted()).to.deep.equal({});
  });

  it('flush with nothing noted commits nothing', async () => {
    const { calls, commit } = controlledCommits();
    await new OffsetCommitter(commit).flush();
    expect(calls).to.have.length(0);
  });
});
