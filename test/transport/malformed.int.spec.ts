// Messages that are not valid events, and an event a projection cannot apply: each is parked
// once (projections/runtime/parking.ts), and everything else on the topic (also behind them on
// the same partition) is applied.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { EventEnvelope } from '../../contracts/envelope';
import { encodeEvent, partitionOf } from '../../infra/kafka';
import { readModelProjection } from '../../projections/readModel';
import { consumerGroupOf } from '../../projections/runtime/kafkaProjector';
import { caseStream } from '../support/kafka';
import {
  META, RECORDER, appendCase, appliedRows, caseEvent, expectCheckpointsAtPartitionHeads, expectReadModelMatchesStore, failures,
  projectionsUnderTest, recordingProjection, transportSuite, waitForConsumers, waitForRelay, waitUntil,
} from '../support/kafka';

const PROJECTIONS = [readModelProjection.name, RECORDER];
const held = (stream: string, position: string) => `held behind the parked event at position ${position} of stream ${stream}`;
type Message = ReturnType<typeof encodeEvent>;

/** The first `count` case ids whose stream lands on `partition`. */
function casesOn(partition: number, partitions: number, count: number, after = 0): number[] {
  const ids: number[] = [];
  for (let id = after + 1; ids.length < count; id++) if (partitionOf(caseStream(id), partitions) === partition) ids.push(id);
  return ids;
}

function envelope(caseId: number, revision: number, position: number, event = caseEvent(caseId, revision)): EventEnvelope {
  return {
    id: randomUUID(), type: event.type, schemaVersion: 1, streamId: caseStream(caseId), revision: String(revision), position: String(position),
    recordedAt: '2026-01-01T00:00:00.000Z', data: event.data, metadata: META,
  };
}

describe('Kafka transport: malformed messages and failing events (real broker)', function () {
  this.timeout(90_000);
  const suite = transportSuite('Kafka transport malformed messages');

  it('invalid JSON, contract violations and a key that is not the stream are recorded once each and skipped', async () => {
    const tt = await suite.open({ partitions: 3 });
    const [a, b] = casesOn(0, 3, 2);
    const [c] = casesOn(1, 3, 1);
    const [d] = casesOn(2, 3, 1);
    const valid = (caseId: number, revision: number, position: number) => ({ kind: 'valid' as const, event: envelope(caseId, revision, position) });
    const bad = (reason: RegExp, caseId: number, message: Omit<Message, 'key'>) => ({ kind: 'bad' as const, reason, message: { ...message, key: caseStream(caseId) } });
    const foreign = envelope(c, 1, 7);
    const plan = [
      valid(a, 0, 1),
      valid(c, 0, 2),
      bad(/^invalid message: .*JSON/, a, { value: '{"id": "broken' }),
      valid(a, 1, 3),
      valid(b, 0, 4),
      bad(/^invalid message: .*no schema for CaseTeleported/, b, encodeEvent({ ...envelope(b, 1, 5), type: 'CaseTeleported' })),
      bad(/^invalid message: .*RepositoryCaseUpdated violates its contract/, c, encodeEvent(envelope(c, 1, 6, { type: 'RepositoryCaseUpdated', data: { caseId: c, changes: {}, updatedAt: 'later' } }))),
      bad(/^invalid message: .*EventEnvelope violates its contract/, d, { value: '{"hello":"world"}' }),
      bad(/^invalid message: key .* is not the stream /, b, encodeEvent(foreign)),
      valid(b, 1, 8),
      valid(a, 2, 9),
      valid(c, 1, 10),
      valid(d, 0, 11),
    ];
    // Where each message lands: offsets count up per partition of the fresh topic.
    const next = [0, 0, 0];
    const placed = plan.map((m) => {
      const key = m.kind === 'valid' ? m.event.streamId : String(m.message.key);
      const partition = partitionOf(key, 3);
      return { ...m, partition, offset: String(next[partition]++) };
    });
    const producer = tt.kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    tt.defer(() => producer.disconnect());
    await producer.send({ topic: tt.topic, acks: -1, messages: placed.map((m) => (m.kind === 'valid' ? encodeEvent(m.event) : m.message)) });

    // The process's one consumer fetches every message for both projections; each is decoded and checked once.
    let checks = 0;
    const check = tt.contracts.checkEnvelope;
    tt.contracts.checkEnvelope = (value) => (checks++, check(value));
    const parses = (value: unknown) => {
      try {
        JSON.parse(String(value));
        return true;
      } catch {
        return false;
      }
    };
    const checkable = placed.filter((m) => m.kind === 'valid' || parses(m.message.value)).length;

    const projector = tt.startProjector(projectionsUnderTest());
    await waitForConsumers(tt, PROJECTIONS);
    expect(projector.status().map((s) => s.state)).to.deep.equal(['running', 'running']);

    const validEvents = placed.flatMap((m) => (m.kind === 'valid' ? [m.event] : []));
    const expectApplied = async () => {
      const rows = await appliedRows(tt.knex);
      expect(rows.map((r) => [r.stream_id, r.revision, r.position])).to.have.deep.members(validEvents.map((e) => [e.streamId, e.revision, e.position]));
      expect(rows).to.have.length(validEvents.length);
      for (const id of [a, b, c, d]) {
        expect(rows.filter((r) => r.stream_id === caseStream(id)).map((r) => r.revision), `revisions of case ${id}`).to.deep.equal(
          validEvents.filter((e) => e.streamId === caseStream(id)).map((e) => e.revision));
      }
    };
    const place = (partition: unknown, offset: unknown) => `${partition}:${String(offset).padStart(4, '0')}`;
    const expectFailuresOnce = async () => {
      const expected = placed.flatMap((m) => (m.kind === 'bad' ? [{ at: place(m.partition, m.offset), reason: m.reason }] : [])).sort((x, y) => x.at.localeCompare(y.at));
      for (const projection of PROJECTIONS) {
        const recorded = (await failures(tt.knex, projection)).map((f) => ({ at: place(f.kafka_partition, f.kafka_offset), reason: String(f.reason) }))
          .sort((x, y) => x.at.localeCompare(y.at));
        expect(recorded.map((f) => f.at), `failures recorded by ${projection} (partition:offset)`).to.deep.equal(expected.map((f) => f.at));
        recorded.forEach((f, i) => expect(f.reason, `reason of the failure at ${f.at}`).to.match(expected[i].reason));
      }
    };
    await expectApplied();
    await expectFailuresOnce();
    expect(checks, 'contract checks: one per message that is JSON, for two projections').to.equal(checkable);
    tt.contracts.checkEnvelope = check;
    const titles = await tt.knex('repository_cases').orderBy('id').select('id', 'title', 'revision');
    expect(titles.map((r) => [r.id, r.title, String(r.revision)])).to.deep.equal(
      [[a, `case ${a} r2 w0`, '2'], [b, `case ${b} r1 w0`, '1'], [c, `case ${c} r1 w0`, '1'], [d, `case ${d}`, '0']].sort((x, y) => Number(x[0]) - Number(y[0])));

    // Everything again from the start of the topic (the groups' offsets forgotten): nothing recorded or applied twice.
    await projector.stop();
    await tt.admin.deleteGroups([consumerGroupOf(tt.topic, PROJECTIONS)]);
    tt.startProjector(projectionsUnderTest());
    const last = envelope(d, 1, 12);
    await producer.send({ topic: tt.topic, acks: -1, messages: [encodeEvent(last)] });
    validEvents.push(last);
    await waitUntil(async () => (await appliedRows(tt.knex)).length === validEvents.length, 'the event after the replay');
    await waitForConsumers(tt, PROJECTIONS);
    for (const projection of PROJECTIONS) expect(Object.keys(tt.redeliveries(projection)), `replayed to ${projection}`).to.have.length(placed.length);
    await expectApplied();
    await expectFailuresOnce();
  });

  it('an event the projection cannot apply is parked after 3 tries with the later events of its stream, every other stream goes on', async () => {
    const tt = await suite.open({ partitions: 3 });
    const [broken, neighbour] = casesOn(0, 3, 2);
    const others = [...casesOn(1, 3, 3), ...casesOn(2, 3, 3)];
    const refuse = (e: EventEnvelope) => e.streamId === caseStream(broken) && e.revision === '1';
    for (const id of [broken, neighbour, ...others]) await appendCase(tt.store, id, 4);
    tt.startRelay();
    const projector = tt.startProjector([readModelProjection, recordingProjection({ failWhen: refuse })]);
    await waitForRelay(tt);
    await waitForConsumers(tt, PROJECTIONS);
    // Later events: more of the parked stream, and of a stream behind it on the same partition.
    await appendCase(tt.store, broken, 2);
    await appendCase(tt.store, neighbour, 1);
    await waitForRelay(tt);
    await waitForConsumers(tt, PROJECTIONS);

    const brokenEvents = await tt.store.readStream(caseStream(broken));
    const recorded = await failures(tt.knex, RECORDER);
    expect(recorded.map((f) => [f.kind, f.stream_id, String(f.position), f.kafka_partition, f.reason])).to.deep.equal([
      ['failed', caseStream(broken), brokenEvents[1].position, 0, `recorder refuses ${caseStream(broken)}@1`],
      ...brokenEvents.slice(2).map((e) => ['held', caseStream(broken), e.position, 0, held(caseStream(broken), brokenEvents[1].position)]),
    ]);
    expect(recorded[0].attempts, 'tried 3 times, then parked').to.equal(3);
    expect(new Set(recorded.map((f) => f.kafka_offset)).size, 'one failure per message').to.equal(recorded.length);
    expect(await failures(tt.knex, readModelProjection.name), 'the other projection is not affected').to.deep.equal([]);
    expect(projector.status().find((s) => s.name === RECORDER)).to.include({ state: 'running', parkedStreams: 1 });

    const rows = await appliedRows(tt.knex);
    expect(rows.filter((r) => r.stream_id === caseStream(broken)).map((r) => r.revision), 'the parked stream up to its failure').to.deep.equal(['0']);
    const rest = rows.filter((r) => r.stream_id !== caseStream(broken));
    for (const id of [neighbour, ...others]) {
      expect(rest.filter((r) => r.stream_id === caseStream(id)).map((r) => r.revision), `case ${id}`).to.deep.equal(id === neighbour ? ['0', '1', '2', '3', '4'] : ['0', '1', '2', '3']);
    }
    expect(rest).to.have.length(5 + 4 * others.length);
    await expectReadModelMatchesStore(tt);
    await expectCheckpointsAtPartitionHeads(tt, PROJECTIONS);
    // Restarted, the projector still knows the stream is parked.
    await projector.stop();
    const restarted = tt.startProjector([readModelProjection, recordingProjection({ failWhen: refuse })]);
    await appendCase(tt.store, broken, 1);
    await waitForRelay(tt);
    await waitForConsumers(tt, PROJECTIONS);
    expect((await failures(tt.knex, RECORDER)).at(-1)).to.include({ stream_id: caseStream(broken), kind: 'held', reason: held(caseStream(broken), brokenEvents[1].position) });
    expect(restarted.status().find((s) => s.name === RECORDER)).to.include({ parkedStreams: 1 });
  });

  it('a stream parked by one projector stays parked when a rebalance gives its partition to another', async () => {
    const tt = await suite.open({ partitions: 3 });
    const [broken, neighbour] = casesOn(0, 3, 2);
    const refuse = (e: EventEnvelope) => e.streamId === caseStream(broken) && e.revision === '1';
    const group = consumerGroupOf(tt.topic, RECORDER);
    const members = async () => {
      const [g] = (await tt.admin.describeGroups([group])).groups;
      return g.state === 'Stable' ? g.members.length : -1;
    };
    const projectors = { one: tt.startProjector([recordingProjection({ consumer: 'one', failWhen: refuse })]), two: tt.startProjector([recordingProjection({ consumer: 'two', failWhen: refuse })]) };
    await waitUntil(async () => (await members()) === 2, 'both projectors in the group');
    tt.startRelay();
    for (const id of [broken, neighbour, ...casesOn(1, 3, 2), ...casesOn(2, 3, 2)]) await appendCase(tt.store, id, 3);
    await waitForRelay(tt);
    await waitForConsumers(tt, [RECORDER]);
    const owner = (await appliedRows(tt.knex)).find((r) => r.stream_id === caseStream(broken))!.consumer as keyof typeof projectors;
    expect(await failures(tt.knex, RECORDER)).to.have.length(2); // revision 1 refused, revision 2 parked

    await projectors[owner].stop();
    await waitUntil(async () => (await members()) === 1, 'the other projector alone in the group');
    await appendCase(tt.store, broken, 1);
    await appendCase(tt.store, neighbour, 1);
    await waitForRelay(tt);
    await waitForConsumers(tt, [RECORDER]);

    const rows = await appliedRows(tt.knex);
    expect(rows.filter((r) => r.stream_id === caseStream(neighbour)).map((r) => r.revision)).to.deep.equal(['0', '1', '2', '3']);
    expect(rows.filter((r) => r.stream_id === caseStream(broken)).map((r) => r.revision), 'the parked stream after its failure').to.deep.equal(['0']);
    const brokenEvents = await tt.store.readStream(caseStream(broken));
    expect((await failures(tt.knex, RECORDER)).map((f) => [String(f.position), f.reason])).to.deep.equal([
      [brokenEvents[1].position, `recorder refuses ${caseStream(broken)}@1`],
      ...brokenEvents.slice(2).map((e) => [e.position, held(caseStream(broken), brokenEvents[1].position)]),
    ]);
  });
});
