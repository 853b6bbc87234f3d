import { expect } from 'chai';
import type { Knex } from 'knex';
import { ENTITIES, type EntityDef, type EntityName, writtenAs } from '../../../contracts/entities';
import type { EventEnvelope } from '../../../contracts/envelope';
import { createKnex } from '../../../infra/postgres/database';
import { migrateReadModel } from '../../../projections/migrations';
import { readModelProjection } from '../../../projections/readModel';
import { applyBatch } from '../../../projections/runtime/applyBatch';
import { rebuildProjection } from '../../../projections/runtime/rebuild';
import { parseFindArgs } from '../../../services/model/args';
import { runFind } from '../../../services/model/query';
import { mulberry32 } from '../../../scripts/generateExport';
import { startTestApp, type TestApp } from '../../support/app';
import { sampleCreate, sampleUpdate } from '../../support/entityFixtures';
import type { HttpClient } from '../../support/server';
import { expectCompleted, importingAdmin, postImport } from '../../imports/importClient';

/**
 * The property behind `asOf` (docs/history.md): for random sequences of commands, a read as of
 * every position of the log equals the read model as it was right after that position. Two kinds
 * of snapshot are compared with it:
 *
 * - the live read model itself, read after each command (the position the projector rested on);
 * - for every position in between (a command appends several events, a result import many
 *   chunks, and the projector applies them in batches), a read model built in a schema of its own
 *   by applying the log one event at a time, read after each event.
 *
 * Every catalogue entity is read (users and statistics excepted: kept as they are now only) with all
 * its fields, the ids of its many-to-many links and the count of each list relation.
 * Slow: for 2 seeds, 60 random commands reading every entity after each, then the whole log replayed one event at a time, every entity read twice per event, and a rebuild in pages of 7
 */

/** Every entity a read asOf answers for (accounts and statistics are kept as they are now only). */
const READ: EntityName[] = (Object.keys(ENTITIES) as EntityName[]).filter((name) => name !== 'user' && ENTITIES[name].keepsHistory !== false);
/** Entities the commands write through the model API (the rest are written by seeding, imports, or inside their parents). */
const WRITTEN: EntityName[] = ['tag', 'repositoryFolder', 'repositoryCase', 'testRun', 'testRunCase', 'testRunResult', 'milestone', 'configuration', 'session', 'comment', 'caseField', 'template'];

/** The findMany arguments of a snapshot: every field, the many-to-many links' ids, every list relation counted. */
function snapshotArgs(entity: EntityDef): Record<string, unknown> {
  const select: Record<string, unknown> = Object.fromEntries(Object.keys(entity.fields).map((f) => [f, true]));
  const counts: Record<string, true> = {};
  for (const [name, relation] of Object.entries(entity.relations)) {
    if (relation.kind !== 'many') continue;
    counts[name] = true;
    if (relation.through) select[name] = { select: { id: true }, orderBy: { id: 'asc' } };
  }
  if (Object.keys(counts).length > 0) select._count = { select: counts };
  // Case versions get their ids from a sequence, in an order that depends on how events were batched: read by case and version.
  if (entity.name === 'repositoryCaseVersion') {
    delete select.id;
    return { select, orderBy: [{ repositoryCaseId: 'asc' }, { version: 'asc' }] };
  }
  return { select, orderBy: { id: 'asc' } };
}

async function snapshot(knex: Knex, asOf?: string): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const name of READ) {
    const entity = ENTITIES[name];
    out[name] = (await runFind(knex, entity, 'findMany', parseFindArgs(entity, 'findMany', snapshotArgs(entity)), asOf === undefined ? {} : { asOf })) as unknown[];
  }
  return out;
}

/**
 * Every row of a table as JSON text, sorted; without the columns a sequence fills (their values
 * depend on how the events were batched).
 */
async function tableRows(knex: Knex, schema: string, table: string): Promise<string[]> {
  const { rows: serial } = await knex.raw(`SELECT column_name FROM information_schema.columns
    WHERE table_schema = ? AND table_name = ? AND column_default LIKE 'nextval(%'`, [schema, table]);
  const drop = (serial as { column_name: string }[]).map((c) => ` - '${c.column_name}'`).join('');
  const { rows } = await knex.raw(`SELECT (to_jsonb(t)${drop})::text AS row FROM "${schema}"."${table}" t`);
  return (rows as { row: string }[]).map((r) => r.row).sort();
}

function expectSame(actual: Record<string, unknown[]>, expected: Record<string, unknown[]>, what: string): void {
  for (const name of READ) expect(actual[name], `${what}: ${name}`).to.deep.equal(expected[name]);
}

describe('asOf: a read as of every position equals the read model right after it (property)', function () {
  this.timeout(600_000);
  const SEEDS = process.env.AS_OF_SEED ? [Number(process.env.AS_OF_SEED)] : [20261127, 7];
  const STEPS = 60;

  for (const seed of SEEDS) {
    describe(`seed ${seed}`, () => {
      let app: TestApp;
      let admin: HttpClient;
      let token: string;
      let projectId: number;
      let scratch: Knex | null = null;
      let schema = '';
      /** position → the live read model read right after the command that ended there. */
      const live = new Map<string, Record<string, unknown[]>>();

      before(async () => {
        app = await startTestApp({ imports: { chunkSize: 2 } });
        ({ admin, token, projectId } = await importingAdmin(app, `Property ${seed}`));
      });
      after(async () => {
        await scratch?.raw(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
        await scratch?.destroy();
        await app?.stop();
      });

      it(`runs ${STEPS} random commands, reading the live read model after each`, async () => {
        const next = mulberry32(seed); // a failure names its seed, and AS_OF_SEED=<seed> replays it
        const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)];
        const ids = new Map<EntityName, number[]>();
        const known = (name: EntityName) => ids.get(name) ?? [];
        const remember = (name: EntityName, id: number) => ids.set(name, [...known(name), id]);
        const call = async (entity: string, op: string, body: unknown) => {
          const res = await admin.post(`/api/model/${entity}/${op}`, body);
          // A random command may break a rule (a unique name, a row deleted before): refused, it appends nothing.
          expect(res.status, `${entity} ${op}: ${JSON.stringify(res.body)}`).to.be.oneOf([200, 201, 400, 404, 409]);
          if (process.env.AS_OF_DEBUG && res.status >= 300) console.log(entity, op, JSON.stringify(body).slice(0, 200), res.body.code, res.body.error.slice(0, 150));
          return res.status < 300 ? res.body.data : null;
        };
        const junit = (tests: string[]) => `<testsuite name="S" tests="${tests.length}">${tests.map((t) =>
          `<testcase classname="prop.Suite" name="${t}" time="0.${Math.floor(next() * 9) + 1}">${next() < 0.4 ? '<failure message="boom"/>' : ''}</testcase>`).join('')}</testsuite>`;
        let serial = 0;

        for (let step = 0; step < STEPS; serial++) {
          const roll = next();
          if (roll < 0.12) {
            // A result import: a new run, or more results for a run made before (its run cases change).
            const runs = known('testRun');
            const into: Record<string, string | number> = runs.length > 0 && next() < 0.5 ? { testRunId: pick(runs) } : { name: `Imported ${serial}` };
            const tests = ['a', 'b', 'c', 'd', 'e'].filter(() => next() < 0.6);
            const answer = await postImport(app.url, '/api/junit/import', { projectId, ...into }, [{ name: 'TEST-prop.xml', content: junit(tests.length ? tests : ['a']) }], token);
            remember('testRun', expectCompleted(answer));
          } else if (roll < 0.2) {
            // A folder: made (under another, maybe), renamed or moved, a case put in it.
            const folders = known('repositoryFolder');
            const cases = known('repositoryCase');
            if (folders.length === 0 || next() < 0.4) {
              const parent = folders.length > 0 && next() < 0.5 ? { parent: { connect: { id: pick(folders) } } } : {};
              const row = await call('repositoryFolder', 'create', { data: { name: `Folder ${serial}`, project: { connect: { id: projectId } }, ...parent } });
              if (row) remember('repositoryFolder', row.id);
            } else if (cases.length > 0 && next() < 0.5) {
              await call('repositoryCase', 'update', { where: { id: pick(cases) }, data: { folder: { connect: { id: pick(folders) } } } });
            } else {
              await call('repositoryFolder', 'update', { where: { id: pick(folders) }, data: { name: `Folder ${serial}` } });
            }
          } else if (roll < 0.35 && next() < 0.3) {
            // Cases a result import keys (docs/imports.md): one made by hand that the next import of
            // its test adopts, or an imported one renamed (its key becomes an alias); both later
            // changed by the case commands below, so a rebuild keeping case rows across pages must
            // not write back what these changed with SQL of their own.
            if (next() < 0.5) {
              const row = await call('repositoryCase', 'create', { data: { title: pick(['a', 'b', 'c', 'd', 'e']), className: 'prop.Suite', source: 'JUNIT', automated: true, project: { connect: { id: projectId } } } });
              if (row) remember('repositoryCase', row.id);
            } else {
              const imported = (await call('repositoryCase', 'findMany', { where: { className: 'prop.Suite', source: 'JUNIT' }, select: { id: true } })) as { id: number }[] | null;
              if (!imported || imported.length === 0) continue;
              const id = pick(imported).id;
              if (await call('repositoryCase', 'update', { where: { id }, data: { title: `Renamed ${serial}` } })) remember('repositoryCase', id);
            }
          } else if (roll < 0.35) {
            // A case with its steps and tags: created, or changed whole.
            const cases = known('repositoryCase');
            const tags = known('tag').filter(() => next() < 0.5).map((id) => ({ id }));
            const steps = Array.from({ length: Math.floor(next() * 3) }, (_, i) => ({ step: `step ${serial}.${i}` }));
            if (cases.length === 0 || next() < 0.4) {
              const row = await call('repositoryCase', 'create', { data: { title: `Case ${serial}`, project: { connect: { id: projectId } }, steps: { create: steps }, tags: { connect: tags } } });
              if (row) remember('repositoryCase', row.id);
            } else {
              await call('repositoryCase', 'update', { where: { id: pick(cases) }, data: { title: `Case ${serial}`, steps: { deleteMany: {}, create: steps }, tags: { set: tags } } });
            }
          } else if (roll < 0.6) {
            const name = pick(WRITTEN);
            const entity = ENTITIES[name];
            if (writtenAs(entity) !== 'aggregate') continue;
            const data = sampleCreate(entity, (t) => (t === 'project' ? projectId : known(t).length ? pick(known(t)) : undefined), serial + seed);
            if (!data) continue;
            const row = await call(name, 'create', { data });
            if (row) remember(name, row.id);
          } else if (roll < 0.85) {
            const name = pick(WRITTEN.filter((n) => known(n).length > 0));
            if (!name) continue;
            await call(name, 'update', { where: { id: pick(known(name)) }, data: sampleUpdate(ENTITIES[name], serial) });
          } else {
            const name = pick(WRITTEN.filter((n) => known(n).length > 0 && n !== 'testRun'));
            if (!name) continue;
            const id = pick(known(name));
            if (await call(name, 'delete', { where: { id } })) ids.set(name, known(name).filter((k) => k !== id));
          }
          step++;
          live.set((await app.deps.store.headPosition()).toString(), await snapshot(app.deps.knex));
        }
        expect(live.size).to.be.greaterThan(STEPS / 2);
      });

      it('answers, as of each of those positions, what the live read model held then', async () => {
        for (const [position, expected] of live) expectSame(await snapshot(app.deps.knex, position), expected, `asOf ${position}`);
      });

      it('answers, as of every position of the log, what a read model applying one event at a time held right after it', async () => {
        schema = `as_of_property_${seed}_${process.pid}`;
        const admin = createKnex(app.databaseUrl, 1);
        await admin.raw(`CREATE SCHEMA "${schema}"`);
        await admin.destroy();
        scratch = createKnex(app.databaseUrl, 2, undefined, { searchPath: [schema, 'public'] });
        await migrateReadModel(scratch);
        const events: EventEnvelope[] = [];
        for (let after = '0'; ;) {
          const page = await app.deps.store.readAll({ after, maxCount: 1000 });
          if (page.length === 0) break;
          events.push(...page);
          after = page[page.length - 1].position;
        }
        expect(events.length).to.be.greaterThan(100);
        expectSame(await snapshot(app.deps.knex, '0'), await snapshot(scratch), 'asOf 0 (nothing yet)');
        let compared = 0;
        for (const event of events) {
          await applyBatch(scratch, readModelProjection, [event]);
          const expected = await snapshot(scratch);
          expectSame(await snapshot(app.deps.knex, event.position), expected, `asOf ${event.position} (${event.type})`);
          const rested = live.get(event.position);
          if (rested) expectSame(expected, rested, `one event at a time against the live read model at ${event.position}`);
          compared++;
        }
        expect(compared).to.equal(events.length);
        if (process.env.AS_OF_DEBUG) {
          const types = new Map<string, number>();
          for (const e of events) types.set(e.type, (types.get(e.type) ?? 0) + 1);
          console.log(events.length, [...types].map(([t, n]) => `${t}:${n}`).join(' '));
        }
      });

      it('a rebuild (in pages of 7, through the read model\'s rebuild session: COPY, rows kept across pages, project days at the end) holds the rows the live read model holds, in every table, history and statistics included', async () => {
        await rebuildProjection(readModelProjection, { store: app.deps.store, knex: scratch!, pageSize: 7 });
        let compared = 0;
        for (const table of readModelProjection.tables) {
          const [rebuilt, kept] = [await tableRows(scratch!, schema, table), await tableRows(app.deps.knex, 'public', table)];
          expect(rebuilt, table).to.deep.equal(kept);
          compared += kept.length;
        }
        expect(compared).to.be.greaterThan(150);
      });
    });
  }
});
