import { expect } from 'chai';
import { Pauses } from '../../../services/shared/pauses';

/** 'ended' if `p` settles within `ms`, else 'still sleeping'. */
const within = (p: Promise<void>, ms: number) =>
  Promise.race([p.then(() => 'ended'), new Promise<string>((r) => setTimeout(() => r('still sleeping'), ms))]);

describe('Pauses: the pauses a stop() must be able to end', () => {
  it('a pause ends by itself after its time', async () => {
    expect(await within(new Pauses().sleep(10), 5_000)).to.equal('ended');
  });

  it('wakeAll() ends every pause under way; a pause asked for afterwards sleeps as asked', async () => {
    const pauses = new Pauses();
    const [a, b] = [pauses.sleep(60_000), pauses.sleep(60_000)];
    pauses.wakeAll();
    expect(await within(Promise.all([a, b]).then(() => undefined), 5_000)).to.equal('ended');
    const later = pauses.sleep(60_000);
    expect(await within(later, 200)).to.equal('still sleeping');
    pauses.wakeAll();
    expect(await within(later, 5_000)).to.equal('ended');
  });

  it('close() ends every pause under way and every later one at once (a loop between an await and its next pause)', async () => {
    const pauses = new Pauses();
    const under = pauses.sleep(60_000);
    pauses.close();
    expect(await within(under, 5_000)).to.equal('ended');
    expect(await within(pauses.sleep(60_000), 5_000)).to.equal('ended');
  });
});
