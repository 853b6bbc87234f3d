import { expect } from 'chai';
import { QuietLog } from '../../../projections/search/quietLog';

/** A store whose head the test moves, counting the reads; a clock the test moves. */
function fixture() {
  const state = { head: '10', reads: 0, now: 1_000, failing: false };
  const store = {
    headPosition: async () => {
      state.reads += 1;
      if (state.failing) throw new Error('connection terminated');
      return state.head;
    },
  };
  const quiet = new QuietLog(store, 1000, 200, () => state.now);
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  return { state, quiet, settle };
}

describe('QuietLog: whether the log has been still for a while', () => {
  it('not quiet before its first sample, nor until the head has stayed put for quietMs', async () => {
    const { state, quiet, settle } = fixture();
    expect(quiet.isQuiet()).to.equal(false);
    await settle();
    state.now += 999;
    expect(quiet.isQuiet()).to.equal(false);
    await settle();
    state.now += 1;
    expect(quiet.isQuiet()).to.equal(true);
  });

  it('a head that moves starts the wait again; so does a position the caller saw past it', async () => {
    const { state, quiet, settle } = fixture();
    quiet.isQuiet();
    await settle();
    state.now += 1500;
    state.head = '11';
    expect(quiet.isQuiet(), 'the last sample is still the old head').to.equal(true);
    await settle();
    expect(quiet.isQuiet(), 'the sample saw the move').to.equal(false);
    state.now += 1000;
    expect(quiet.isQuiet()).to.equal(true);
    quiet.saw('12');
    expect(quiet.isQuiet()).to.equal(false);
    quiet.saw('5');
    state.now += 1000;
    expect(quiet.isQuiet(), 'a position behind the head is no move').to.equal(true);
  });

  it('samples the head at most every sampleMs, one read at a time', async () => {
    const { state, quiet, settle } = fixture();
    for (let i = 0; i < 50; i++) quiet.isQuiet();
    await settle();
    expect(state.reads).to.equal(1);
    state.now += 199;
    quiet.isQuiet();
    await settle();
    expect(state.reads).to.equal(1);
    state.now += 1;
    quiet.isQuiet();
    await settle();
    expect(state.reads).to.equal(2);
  });

  it('a head that cannot be read counts as moving', async () => {
    const { state, quiet, settle } = fixture();
    quiet.isQuiet();
    await settle();
    state.now += 5000;
    state.failing = true;
    quiet.isQuiet();
    await settle();
    expect(quiet.isQuiet()).to.equal(false);
    state.failing = false;
    state.now += 200;
    quiet.isQuiet();
    await settle();
    expect(quiet.isQuiet(), 'read again: a new wait starts').to.equal(false);
  });
});
