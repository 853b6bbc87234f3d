import { expect } from 'chai';
import type { EventMetadata } from '../../../contracts/envelope';
import { loadContracts, type ContractValidator } from '../../../contracts/validator';
import { type HeldClaim, appendClaim, releaseClaim, writeWithClaims } from '../../../services/claims/uniqueClaims';
import { registerUser } from '../../../services/identity/identity.handlers';
import type { CommandDeps } from '../../../services/shared/commandBus';
import { ContractViolation, DomainError } from '../../../services/shared/errors';
import { IdAllocator } from '../../../services/shared/ids';
import { withContracts } from '../../../services/shared/validatingEventStore';
import { MemoryEventStore } from '../../support/memoryEventStore';

const META: EventMetadata = { actor: { userId: null, via: 'system' }, correlationId: 'test', causationId: null };
const ADA = { streamId: 'uniqueEmail-ada@example.com', scope: 'user.email', value: 'ada@example.com', ownerId: 7 };
/** The error a promise is rejected with (it must be rejected). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}
const types = async (store: MemoryEventStore, streamId: string) => (await store.readStream(streamId)).map((e) => e.type);
const userRegistered = (userId: number) => ({
  type: 'UserRegistered', data: { userId, email: 'ada@example.com', name: 'Ada', passwordHash: '$argon2id$x', access: 'USER', roleId: null, createdAt: '2026-01-01T00:00:00.000Z' },
});

describe('unique-value claims (services/claims/uniqueClaims.ts)', () => {
  describe('releaseClaim', () => {
    let store: MemoryEventStore;
    let claim: HeldClaim;
    beforeEach(async () => {
      store = new MemoryEventStore();
      claim = await appendClaim(store, ADA, 'no-stream', META);
    });

    it('releases a claim whose owner was not written, at the claim\'s revision', async () => {
      expect(await releaseClaim(store, claim, 'owner-write-failed', META)).to.equal('released');
      const [, released] = await store.readStream(ADA.streamId);
      expect(released).to.deep.include({ type: 'UniqueValueReleased', revision: '1' });
      expect(released.data).to.deep.equal({ scope: 'user.email', value: 'ada@example.com', ownerId: 7, reason: 'owner-write-failed' });
    });

    it('leaves the claim when its owner was written after all (a write that failed late)', async () => {
      await store.append('user-7', [userRegistered(7)], { expectedRevision: 'no-stream', metadata: META });
      expect(await releaseClaim(store, claim, 'owner-write-failed', META)).to.equal('owner-appeared');
      expect(await types(store, ADA.streamId)).to.deep.equal(['UniqueValueClaimed']);
    });

    it('leaves a claim that moved on (claimed again since)', async () => {
      await appendClaim(store, { ...ADA, ownerId: 8 }, 0n, META);
      expect(await releaseClaim(store, claim, 'owner-never-appeared', META)).to.equal('claim-moved-on');
      expect(await types(store, ADA.streamId)).to.deep.equal(['UniqueValueClaimed', 'UniqueValueClaimed']);
    });

    it('claims the value again for an owner that appeared while it was being released', async () => {
      // The owner's append lands just before the release.
      store.beforeAppend(async (streamId) => {
        if (streamId !== ADA.streamId) return;
        store.beforeAppend(null);
        await store.append('user-7', [userRegistered(7)], { expectedRevision: 'no-stream', metadata: META });
      });
      expect(await releaseClaim(store, claim, 'owner-never-appeared', META)).to.equal('owner-appeared');
      const events = await store.readStream(ADA.streamId);
      expect(events.map((e) => e.type)).to.deep.equal(['UniqueValueClaimed', 'UniqueValueReleased', 'UniqueValueClaimed']);
      expect(events[2].data).to.deep.include({ ownerId: 7 });
    });
  });

  describe('writeWithClaims', () => {
    it('a claim lost to another writer releases the claims taken before it, and answers `taken`', async () => {
      const store = new MemoryEventStore();
      await appendClaim(store, { ...ADA, streamId: 'unique-b', value: 'b', ownerId: 9 }, 'no-stream', META);
      let written = false;
      const attempt = writeWithClaims(store, [
        { claim: { ...ADA, streamId: 'unique-a', value: 'a' }, expectedRevision: 'no-stream' },
        { claim: { ...ADA, streamId: 'unique-b', value: 'b' }, expectedRevision: 'no-stream' },
      ], async () => { written = true; }, (c) => new DomainError('value-taken', c.value), META);
      const error = await rejection(attempt);
      expect(error).to.be.instanceOf(DomainError).and.to.have.property('message', 'b');
      expect(written).to.equal(false);
      expect(await types(store, 'unique-a')).to.deep.equal(['UniqueValueClaimed', 'UniqueValueReleased']);
      expect(await types(store, 'unique-b')).to.deep.equal(['UniqueValueClaimed']);
    });

    it('a failed write releases its claims and throws the write\'s own error', async () => {
      const store = new MemoryEventStore();
      const failure = new Error('the owner cannot be written');
      expect(await rejection(writeWithClaims(store, [{ claim: ADA, expectedRevision: 'no-stream' }], async () => { throw failure; }, () => new Error('taken'), META)))
        .to.equal(failure);
      expect(await types(store, ADA.streamId)).to.deep.equal(['UniqueValueClaimed', 'UniqueValueReleased']);
    });
  });

  it('registerUser checks its events against their contracts before an id or the e-mail is taken', async () => {
    const memory = new MemoryEventStore();
    const real = loadContracts();
    // The real contracts, with one rule more: a registration they refuse.
    const stricter: ContractValidator = {
      ...real,
      check: (event) => {
        if (event.type === 'UserRegistered') throw new ContractViolation(event.type, [{ message: 'refused by the test' }]);
        real.check(event);
      },
    };
    const store = withContracts(memory, stricter);
    const deps = { store, ids: new IdAllocator(store), clock: () => new Date('2026-01-01T00:00:00Z') } as unknown as CommandDeps;
    const error = await rejection(registerUser(deps, { email: 'ada@example.com', name: 'Ada', password: 'ada-Password-1234', access: 'USER' }, META));
    expect(error).to.be.instanceOf(ContractViolation);
    expect(memory.callsOf('append'), 'nothing appended: no id block, no claim').to.deep.equal([]);
  });
});
