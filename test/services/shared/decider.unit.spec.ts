import { expect } from 'chai';
import type { EventMetadata } from '../../../contracts/envelope';
import { ENTITIES } from '../../../contracts/entities';
import type { EntityEvent } from '../../../contracts/events';
import { type EntityCommand, entityDecider } from '../../../services/entities/entity.decider';
import { handleCommand, loadAggregate } from '../../../services/shared/decider';
import { ConcurrencyError, DomainError } from '../../../services/shared/errors';
import { MemoryEventStore } from '../../support/memoryEventStore';

const META: EventMetadata = { actor: { userId: 1, via: 'api' }, correlationId: 'req-1', causationId: null };
const T0 = '2024-03-01T10:00:00.000Z';
const NOW = '2024-03-03T10:00:00.000Z';
const STREAM = 'project-7';

const projectDecider = entityDecider(ENTITIES.project);
const create: EntityCommand = { type: 'Create', id: 7, values: { name: 'Checkout' }, facts: {}, now: T0 };
const renameTo = (name: string): EntityCommand => ({ type: 'Update', id: 7, values: { name }, facts: {}, now: NOW });
const renamedTo = (name: string, updatedAt = NOW): EntityEvent =>
  ({ type: 'ProjectUpdated', data: { projectId: 7, changes: { name }, updatedAt } });

/** A store holding project 7 ("Checkout", revision 0), with the set-up calls forgotten. */
async function storeWithProject(): Promise<MemoryEventStore> {
  const store = new MemoryEventStore();
  await handleCommand(store, STREAM, projectDecider, create, META);
  store.calls.length = 0;
  return store;
}

/** Another writer renames the project between the handler's read and its append: once per name, in order. */
function competingRenames(store: MemoryEventStore, names: string[]): void {
  const queue = [...names];
  store.beforeAppend(async (streamId) => {
    const name = queue.shift();
    if (name === undefined) return;
    await store.append(streamId, [renamedTo(name, T0)], { expectedRevision: 'any', metadata: META });
  });
}

const streamData = async (store: MemoryEventStore) => (await store.readStream(STREAM)).map((e) => e.data);

describe('handleCommand', () => {
  it('appends the decided events to a new stream with no-stream expected', async () => {
    const store = new MemoryEventStore();
    const outcome = await handleCommand(store, STREAM, projectDecider, create, META);
    expect(outcome).to.deep.equal({
      events: [{ type: 'ProjectCreated', data: { projectId: 7, name: 'Checkout', createdAt: T0 } }],
      streamId: STREAM,
      position: '1',
    });
    expect(store.calls.map((c) => c.method)).to.deep.equal(['readStream', 'append']);
    expect(store.callsOf('append').map((c) => [c.streamId, c.expectedRevision, c.outcome])).to.deep.equal([[STREAM, 'no-stream', 'ok']]);
    const [stored] = await store.readStream(STREAM);
    expect(stored.metadata).to.deep.equal(META);
  });

  it('appends at the revision it loaded', async () => {
    const store = await storeWithProject();
    const outcome = await handleCommand(store, STREAM, projectDecider, renameTo('Checkout v2'), META);
    expect(outcome).to.deep.equal({ events: [renamedTo('Checkout v2')], streamId: STREAM, position: '2' });
    expect(store.callsOf('append').map((c) => [c.expectedRevision, c.outcome])).to.deep.equal([[0n, 'ok']]);
  });

  it('appends nothing when the decider decides nothing, and reports no position', async () => {
    const store = await storeWithProject();
    const outcome = await handleCommand(store, STREAM, projectDecider, renameTo('Checkout'), META);
    expect(outcome).to.deep.equal({ events: [], streamId: STREAM, position: null });
    expect(store.calls.map((c) => c.method)).to.deep.equal(['readStream']);
  });

  it('after a conflict, loads again and decides again: the competitor already did it, so nothing is left to do', async () => {
    const store = await storeWithProject();
    competingRenames(store, ['Checkout v2']);
    const outcome = await handleCommand(store, STREAM, projectDecider, renameTo('Checkout v2'), META);
    expect(outcome).to.deep.equal({ events: [], streamId: STREAM, position: null });
    expect(store.calls.map((c) => (c.method === 'append' ? `append@${c.expectedRevision}:${c.outcome}` : c.method))).to.deep.equal([
      'readStream', 'append@0:conflict', 'append@any:ok', 'readStream',
    ]);
    expect(await streamData(store)).to.deep.equal([
      { projectId: 7, name: 'Checkout', createdAt: T0 },
      { projectId: 7, changes: { name: 'Checkout v2' }, updatedAt: T0 },
    ]);
  });

  it('after a conflict, decides on the new state and appends at the new revision', async () => {
    const store = await storeWithProject();
    competingRenames(store, ['Checkout (old)']);
    const outcome = await handleCommand(store, STREAM, projectDecider, renameTo('Checkout v2'), META);
    expect(outcome).to.deep.equal({ events: [renamedTo('Checkout v2')], streamId: STREAM, position: '3' });
    expect(store.callsOf('append').map((c) => `${c.expectedRevision}:${c.outcome}`)).to.deep.equal(['0:conflict', 'any:ok', '1:ok']);
    expect((await store.readStream(STREAM)).map((e) => e.revision)).to.deep.equal(['0', '1', '2']);
  });

  it('gives up with the ConcurrencyError after the given number of attempts', async () => {
    const store = await storeWithProject();
    competingRenames(store, ['A', 'B', 'C', 'D']);
    const error = await handleCommand(store, STREAM, projectDecider, renameTo('Checkout v2'), META, 3).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(ConcurrencyError);
    expect((error as ConcurrencyError).code).to.equal('concurrency-conflict');
    const mine = store.callsOf('append').filter((c) => c.expectedRevision !== 'any');
    expect(mine.map((c) => `${c.expectedRevision}:${c.outcome}`)).to.deep.equal(['0:conflict', '1:conflict', '2:conflict']);
    expect((await store.readStream(STREAM)).map((e) => e.type)).to.deep.equal(['ProjectCreated', 'ProjectUpdated', 'ProjectUpdated', 'ProjectUpdated']);
  });

  it('tries five times by default', async () => {
    const store = await storeWithProject();
    competingRenames(store, ['A', 'B', 'C', 'D', 'E', 'F']);
    const error = await handleCommand(store, STREAM, projectDecider, renameTo('Checkout v2'), META).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(ConcurrencyError);
    expect(store.callsOf('append').filter((c) => c.expectedRevision !== 'any')).to.have.length(5);
  });

  it('a rule violation is thrown at once, with nothing appended', async () => {
    const store = new MemoryEventStore();
    const error = await handleCommand(store, STREAM, projectDecider, renameTo('X'), META).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(DomainError);
    expect((error as DomainError).code).to.equal('project-not-found');
    expect(store.calls.map((c) => c.method)).to.deep.equal(['readStream']);
  });

  it('any other append failure is not retried', async () => {
    const store = await storeWithProject();
    store.beforeAppend(() => {
      throw new Error('connection lost');
    });
    const error = await handleCommand(store, STREAM, projectDecider, renameTo('Checkout v2'), META).catch((e: unknown) => e);
    expect((error as Error).message).to.equal('connection lost');
    expect(store.calls.map((c) => c.method)).to.deep.equal(['readStream', 'append']);
    expect(await store.readStream(STREAM)).to.have.length(1);
  });
});

describe('loadAggregate', () => {
  it('folds the stream and reports its revision', async () => {
    const store = await storeWithProject();
    await handleCommand(store, STREAM, projectDecider, renameTo('Checkout v2'), META);
    expect(await loadAggregate(store, STREAM, projectDecider)).to.deep.equal({
      state: { exists: true, isDeleted: false, values: { name: 'Checkout v2' } },
      revision: 1n,
    });
  });

  it('answers the initial state and no revision for a stream that does not exist', async () => {
    expect(await loadAggregate(new MemoryEventStore(), STREAM, projectDecider)).to.deep.equal({
      state: { exists: false, isDeleted: false, values: {} },
      revision: null,
    });
  });
});
