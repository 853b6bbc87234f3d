import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { PostgresSearchEngine } from '../../../infra/search/postgres';
import { ALL_PROJECTIONS } from '../../../projections';
import { scanDocuments } from '../../../projections/search/documents';
import { indexerGroupOf, kafkaReadModelCheckpoints, startSearchIndexer, type SearchIndexer } from '../../../projections/search/indexer';
import { rebuildSearch } from '../../../projections/search/rebuild';
import { DEFAULT_SEARCH_SETTINGS } from '../../../services/shared/search';
import { META, appendCase, startBurst, transportSuite, waitUntil, type TransportTest } from '../../support/kafka';
import { FAST_RETRY, documents } from './support';

/**
 * The indexer on the Kafka transport: one consumer group (`<topic>.indexer`) next to the Kafka
 * projectors that keep the read model; its checkpoints in the engine per partition
 * (`search#<partition>`: the last offset applied). Needs a broker (npm run kafka:up).
 */
describe('search indexer (Kafka consumer group, PostgreSQL search)', function () {
  this.timeout(240_000);
  const suite = transportSuite('search indexer on Kafka');

  const start = (t: TransportTest, engine: PostgresSearchEngine): SearchIndexer => {
    const indexer = startSearchIndexer({
      engine, knex: t.knex, store: t.store, kafka: { kafka: t.kafka, topic: t.topic, partitions: t.partitions }, databaseUrl: t.db.url,
      logger: t.logger, retry: FAST_RETRY, bulkSize: 4,
    });
    t.defer(() => indexer.stop());
    return indexer;
  };

  /** Until the engine holds exactly the case documents the read model has (titles included). */
  const matchesReadModel = async (t: TransportTest, engine: PostgresSearchEngine, indexer: SearchIndexer, cases: number) => {
    let last = '';
    await waitUntil(async () => {
      if ((await engine.liveVersion()) === null) return false;
      await engine.refresh();
      const want = (await scanDocuments(t.knex, 'repository_cases', 0, 10_000)).documents.map((d) => `${d.id}:${d.title}`).sort();
      const have = [...(await documents(engine, 'repository_cases')).values()].map((d) => `${d.id}:${d.title}`).sort();
      last = `want ${want.length}, have ${have.length}; ${JSON.stringify(indexer.status())}`;
      return want.length === cases && JSON.stringify(want) === JSON.stringify(have);
    }, 'the index to match the read model', 120_000, () => last);
  };

  it('follows the topic as one consumer group; its checkpoints in the engine are each partition\'s last offset; restarted, it goes on from them', async () => {
    const t = await suite.open({ partitions: 3 });
    await t.store.append('project-1', [{ type: 'ProjectCreated', schemaVersion: 1, data: { projectId: 1, name: 'Kafka project', createdAt: new Date().toISOString() } }], { expectedRevision: 'no-stream', metadata: META });
    await startBurst(t.store, { streams: 12, eventsPerStream: 4, writers: 3 }).done;
    t.startRelay();
    t.startProjector(ALL_PROJECTIONS);
    const engine = new PostgresSearchEngine(t.knex, { ...DEFAULT_SEARCH_SETTINGS, indexPrefix: `k${randomBytes(4).toString('hex')}_` });
    let indexer = start(t, engine);
    await matchesReadModel(t, engine, indexer, 12);
    expect(indexer.status()).to.deep.include({ state: 'running', engine: 'postgres', version: 1 });

    // Each partition's checkpoint is its last offset, once the group reached the end.
    const ends = await t.admin.fetchTopicOffsets(t.topic);
    const want = Object.fromEntries(ends.filter((p) => BigInt(p.high) > 0n).map((p) => [`search#${p.partition}`, (BigInt(p.high) - 1n).toString()]));
    const offsets = async () => JSON.stringify(Object.entries(await engine.readCheckpoints(1)).filter(([k]) => k.includes('#')).sort());
    const sorted = (o: Record<string, string>) => JSON.stringify(Object.entries(o).sort());
    await waitUntil(async () => (await offsets()) === sorted(want), 'checkpoints at the partitions\' ends', 30_000, async () => `${await offsets()} vs ${sorted(want)}`);
    // Beside each offset, `search@<partition>`: the last event position applied from it (the read model's, at the end).
    const readModel: { name: string; position: string }[] = await t.knex('projection_checkpoints').where('name', 'like', 'readModel#%').select('name', 'position');
    const checkpoints = await engine.readCheckpoints(1);
    for (const { name, position } of readModel) expect(checkpoints[`search@${name.split('#')[1]}`], name).to.equal(String(position));
    const groups = (await t.admin.listGroups()).groups.map((g) => g.groupId);
    expect(groups).to.include(indexerGroupOf(t.topic));

    // Stopped, more events, started again: it goes on from its checkpoints.
    await indexer.stop();
    for (const caseId of [101, 102, 103]) await appendCase(t.store, caseId, 2);
    indexer = start(t, engine);
    await matchesReadModel(t, engine, indexer, 15);
    expect(await engine.liveVersion(), 'no second version: it followed the live one').to.equal(1);

    // A rebuild on Kafka starts version 2 from the read model's committed offsets; the indexer moves to it and goes on.
    const rebuilt = await rebuildSearch({ engine, knex: t.knex, logger: t.logger, bulkSize: 4, checkpointKeys: () => kafkaReadModelCheckpoints(t.kafka, t.topic, t.knex) });
    expect(rebuilt.version).to.equal(2);
    expect(Object.keys(rebuilt.checkpoints).filter((k) => /^search#\d$/.test(k))).to.have.length(3);
    expect(Object.keys(rebuilt.checkpoints).filter((k) => /^search@\d$/.test(k))).to.have.length(3);
    await waitUntil(() => indexer.status().version === 2, 'the indexer on version 2', 20_000);
    for (const caseId of [104, 105]) await appendCase(t.store, caseId, 2);
    await matchesReadModel(t, engine, indexer, 17);
    expect(await engine.versions()).to.deep.equal([2]);
  });
});
