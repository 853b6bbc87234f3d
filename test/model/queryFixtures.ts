import knexFactory, { type Knex } from 'knex';
import { ENTITIES, type EntityDef, type FieldDef } from '../../contracts/entities';
import { migrateReadModel } from '../../projections/migrations';
import { createMigratedDatabase, type TestDatabase } from '../support/database';

/**
 * Read-model rows for model API tests, written by field name (columns come from the catalogue,
 * so a renamed column does not break a fixture). Fields not given get their catalogue default,
 * null when nullable, or a plain value of their type.
 */

const FALLBACK: Record<FieldDef['type'], unknown> = {
  int: 0, float: 0, string: '', boolean: false, datetime: '2024-01-01T00:00:00.000Z', json: {},
};

function fallback(field: FieldDef): unknown {
  if (field.default !== undefined) return field.default;
  if (field.nullable) return null;
  return field.list ? [] : FALLBACK[field.type];
}

/** jsonb takes the JSON text: pg would otherwise turn a JS array into a PostgreSQL array. */
function columnValue(field: FieldDef, value: unknown): unknown {
  if (field.type === 'json' && value !== null) return JSON.stringify(value);
  return value;
}

export async function insertRows(knex: Knex, entity: EntityDef, rows: Record<string, unknown>[]): Promise<void> {
  if (rows.length === 0) return;
  const hasRevision = await knex.schema.hasColumn(entity.table, 'revision');
  const records = rows.map((row) => {
    const unknown = Object.keys(row).filter((name) => !Object.hasOwn(entity.fields, name));
    if (unknown.length > 0) throw new Error(`fixture for ${entity.name} names unknown fields: ${unknown.join(', ')}`);
    const record: Record<string, unknown> = hasRevision ? { revision: 0 } : {};
    for (const [name, field] of Object.entries(entity.fields)) record[field.column] = columnValue(field, name in row ? row[name] : fallback(field));
    return record;
  });
  for (let i = 0; i < records.length; i += 500) await knex(entity.table).insert(records.slice(i, i + 500));
}

/** Join-table rows of a many-to-many relation: `links` maps a source id to its target ids. */
export async function linkRows(knex: Knex, entity: EntityDef, relationName: string, links: Record<number, number[]>): Promise<void> {
  const through = entity.relations[relationName].through;
  if (!through) throw new Error(`${entity.name}.${relationName} is not many-to-many`);
  const rows = Object.entries(links).flatMap(([source, targets]) => targets.map((target) => ({ [through.sourceKey]: Number(source), [through.targetKey]: target })));
  for (let i = 0; i < rows.length; i += 500) await knex(through.table).insert(rows.slice(i, i + 500));
}


/**
 * A small world shared by the model API feature and scope specs:
 * - projects 1 Alpha, 2 Beta, 3 Gamma
 * - folders 10 Auth (p1), 11 Billing (p1, under 10), 12 Zeta (p1, under 11), 20 Root (p2), 30 Hidden (p3)
 * - cases 100 Login (f11), 101 Invoice (f12), 102 Loose (no folder), 103 Auth root (f10) in p1;
 *   104 Root case (f20, p2); 105 Gamma case (f30, p3)
 * - tags 1 smoke, 2 regression, 3 secret, 4 unused; case tags 100 [1, 2], 101 [2], 103 [1, 3], 104 [1], 105 [3]
 * - steps (owned by cases) 1000, 1001 (case 100), 1020 (102), 1030 (103), 1050 (105)
 * - test runs 500 (p1), 501 (p2), 502 (p3); run cases 600, 601, 602; results 700, 703 (run 500), 701 (501), 702 (502)
 * - statuses 1..4 with alias and scope lists; case fields 1..3 with float bounds; case field values with JSON
 */
export async function seedWorld(knex: Knex, entities: Record<string, EntityDef> = ENTITIES): Promise<void> {
  const day = (d: number) => `2024-01-${String(d).padStart(2, '0')}T00:00:00.000Z`;
  await insertRows(knex, entities.project, [
    { id: 1, name: 'Alpha', createdAt: day(1), updatedAt: day(1) },
    { id: 2, name: 'Beta', createdAt: day(2), updatedAt: day(2) },
    { id: 3, name: 'Gamma', createdAt: day(3), updatedAt: day(3) },
  ]);
  await insertRows(knex, entities.repositoryFolder, [
    { id: 10, projectId: 1, parentId: null, name: 'Auth' },
    { id: 11, projectId: 1, parentId: 10, name: 'Billing' },
    { id: 12, projectId: 1, parentId: 11, name: 'Zeta' },
    { id: 20, projectId: 2, parentId: null, name: 'Root' },
    { id: 30, projectId: 3, parentId: null, name: 'Hidden' },
  ]);
  await insertRows(knex, entities.repositoryCase, [
    { id: 102, projectId: 1, folderId: null, title: 'Loose', estimate: 3, source: 'JUNIT', createdAt: day(12) },
    { id: 100, projectId: 1, folderId: 11, title: 'Login', estimate: 5, source: 'MANUAL', createdAt: day(10) },
    { id: 105, projectId: 3, folderId: 30, title: 'Gamma case', estimate: 1, source: 'MANUAL', createdAt: day(15) },
    { id: 101, projectId: 1, folderId: 12, title: 'Invoice', estimate: null, source: 'API', createdAt: day(11) },
    { id: 104, projectId: 2, folderId: 20, title: 'Root case', estimate: 2, source: 'API', createdAt: day(14) },
    { id: 103, projectId: 1, folderId: 10, title: 'Auth root', estimate: 8, source: 'MANUAL', createdAt: day(13) },
  ]);
  await insertRows(knex, entities.tag, [
    { id: 1, name: 'smoke' },
    { id: 2, name: 'regression' },
    { id: 3, name: 'secret' },
    { id: 4, name: 'unused' },
  ]);
  await linkRows(knex, entities.repositoryCase, 'tags', { 100: [1, 2], 101: [2], 103: [1, 3], 104: [1], 105: [3] });
  await insertRows(knex, entities.step, [
    { id: 1000, repositoryCaseId: 100, step: 'open the page', order: 2 },
    { id: 1001, repositoryCaseId: 100, step: 'type the password', order: 1 },
    { id: 1020, repositoryCaseId: 102, step: 'loose step', order: 1 },
    { id: 1030, repositoryCaseId: 103, step: 'check', order: 1 },
    { id: 1050, repositoryCaseId: 105, step: 'hidden step', order: 1 },
  ]);
  await insertRows(knex, entities.testRun, [
    { id: 500, projectId: 1, name: 'Run A' },
    { id: 501, projectId: 2, name: 'Run B' },
    { id: 502, projectId: 3, name: 'Run C' },
  ]);
  await insertRows(knex, entities.testRunCase, [
    { id: 600, testRunId: 500, repositoryCaseId: 100, notes: 'first' },
    { id: 601, testRunId: 501, repositoryCaseId: 104, notes: null },
    { id: 602, testRunId: 502, repositoryCaseId: 105, notes: 'third' },
  ]);
  await insertRows(knex, entities.testRunResult, [
    { id: 700, testRunId: 500, testRunCaseId: 600, statusId: 1 },
    { id: 701, testRunId: 501, testRunCaseId: 601, statusId: 2 },
    { id: 702, testRunId: 502, testRunCaseId: 602, statusId: 1 },
    { id: 703, testRunId: 500, testRunCaseId: 600, statusId: 2 },
  ]);
  await insertRows(knex, entities.status, [
    { id: 1, name: 'Passed', systemName: 'passed', aliases: ['ok', 'green'], scopes: ['RUNS', 'SESSIONS'] },
    { id: 2, name: 'Failed', systemName: 'failed', aliases: ['red'], scopes: ['RUNS'] },
    { id: 3, name: 'Blocked', systemName: 'blocked', aliases: [], scopes: ['AUTOMATION'] },
    { id: 4, name: 'Skipped', systemName: 'skipped', aliases: ['skip', 'ok'], scopes: [] },
  ]);
  await insertRows(knex, entities.caseField, [
    { id: 1, displayName: 'Priority', systemName: 'priority', type: 'NUMBER', minValue: 0.5, maxValue: 10.25 },
    { id: 2, displayName: 'Risk', systemName: 'risk', type: 'NUMBER', minValue: -1.5, maxValue: null },
    { id: 3, displayName: 'Effort', systemName: 'effort', type: 'INTEGER', minValue: null, maxValue: 3 },
  ]);
  await insertRows(knex, entities.caseFieldValue, [
    { id: 1, repositoryCaseId: 100, fieldId: 1, value: { a: [1, { b: null }] } },
    { id: 2, repositoryCaseId: 100, fieldId: 2, value: [1, 'two'] },
    { id: 3, repositoryCaseId: 101, fieldId: 1, value: 'text' },
    { id: 4, repositoryCaseId: 103, fieldId: 1, value: 42 },
    { id: 5, repositoryCaseId: 103, fieldId: 2, value: null },
    { id: 6, repositoryCaseId: 104, fieldId: 1, value: true },
  ]);
}

/**
 * For a describe block: a throw-away database with the read model, filled by `seed` (the fixture
 * world by default), handed to `use`.
 */
export function useSeededWorld(name: string, use: (knex: Knex) => void, seed: (knex: Knex) => Promise<void> = (knex) => seedWorld(knex)): void {
  let db: TestDatabase | undefined;
  let knex: Knex | undefined;
  before(async () => {
    db = await createMigratedDatabase(name);
    knex = knexFactory({ client: 'pg', connection: db.url });
    await migrateReadModel(knex);
    await seed(knex);
    use(knex);
  });
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });
}
