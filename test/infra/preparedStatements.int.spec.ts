import { expect } from 'chai';
import knexFactory, { type Knex } from 'knex';
import { ENTITIES } from '../../contracts/entities';
import { DEFAULT_PREPARED_STATEMENTS, PreparedStatements, preparedStatementsOf, usePreparedStatements } from '../../infra/postgres/preparedStatements';
import { migrateReadModel } from '../../projections/migrations';
import { ConfigError, loadConfig } from '../../services/process/config';
import { parseFindArgs, parseGroupByArgs } from '../../services/model/args';
import { runGroupBy } from '../../services/model/aggregate';
import { runFind } from '../../services/model/query';
import { createMigratedDatabase, type TestDatabase } from '../support/database';
import { insertRows } from '../model/queryFixtures';

const { project, repositoryFolder: folder, repositoryCase: testCase } = ENTITIES;

describe('prepared statements: which texts get a name', () => {
  it('a text is named from its second run on, always with the same name', () => {
    const statements = new PreparedStatements(10);
    expect(statements.nameFor('select 1')).to.equal(undefined);
    const name = statements.nameFor('select 1');
    expect(name).to.match(/^tq_[\w-]{40}$/);
    expect(statements.nameFor('select 1')).to.equal(name);
    expect(new PreparedStatements(10).nameFor('select 2')).to.equal(undefined);
    // Another process (or pool) names the same text the same way.
    const other = new PreparedStatements(10);
    other.nameFor('select 1');
    expect(other.nameFor('select 1')).to.equal(name);
    expect(name!.length).to.be.at.most(63); // PostgreSQL's identifier length
  });

  it('at most `max` texts are named; others keep running unnamed, the named keep their name', () => {
    const statements = new PreparedStatements(2);
    for (const text of ['a', 'b', 'c']) statements.nameFor(text);
    const names = ['a', 'b', 'c'].map((text) => statements.nameFor(text));
    expect(names[0]).to.be.a('string');
    expect(names[1]).to.be.a('string');
    expect(names[2]).to.equal(undefined);
    expect(statements.size).to.equal(2);
    expect(statements.nameFor('a')).to.equal(names[0]);
  });

  it('max 0 names nothing', () => {
    const statements = new PreparedStatements(0);
    for (let i = 0; i < 5; i++) expect(statements.nameFor('select 1')).to.equal(undefined);
  });

  it('PG_PREPARED_STATEMENTS sets the limit (default 200, 0 allowed); a bad value is refused at start', () => {
    expect(loadConfig({}).preparedStatements).to.equal(DEFAULT_PREPARED_STATEMENTS);
    expect(DEFAULT_PREPARED_STATEMENTS).to.equal(200);
    expect(loadConfig({ PG_PREPARED_STATEMENTS: '0' }).preparedStatements).to.equal(0);
    expect(loadConfig({ PG_PREPARED_STATEMENTS: '25' }).preparedStatements).to.equal(25);
    for (const bad of ['-1', 'many', '1.5', '10001']) expect(() => loadConfig({ PG_PREPARED_STATEMENTS: bad })).to.throw(ConfigError, /PG_PREPARED_STATEMENTS/);
  });
});

describe('prepared statements: model API reads on PostgreSQL', () => {
  let db: TestDatabase;
  /** One connection, so that pg_prepared_statements (per session) shows what the reads prepared. */
  let knex: Knex;

  const casesOf = (projectId: number) => runFind(knex, testCase, 'findMany', parseFindArgs(testCase, 'findMany', {
    where: { projectId, title: { contains: 'case', mode: 'insensitive' } }, orderBy: { id: 'asc' }, include: { folder: true },
  })) as Promise<{ id: number; folder: { name: string } }[]>;
  const prepared = async () => (await knex.raw("SELECT name, statement FROM pg_prepared_statements WHERE name LIKE 'tq\\_%'")).rows as { name: string; statement: string }[];

  beforeEach(async () => {
    db = await createMigratedDatabase('prepared_statements');
    knex = knexFactory({ client: 'pg', connection: db.url, pool: { min: 1, max: 1 } });
    await migrateReadModel(knex);
    await insertRows(knex, project, [{ id: 1, name: 'Alpha' }, { id: 2, name: 'Beta' }]);
    await insertRows(knex, folder, [{ id: 1, projectId: 1, name: 'F1' }, { id: 2, projectId: 2, name: 'F2' }]);
    await insertRows(knex, testCase, [1, 2, 3, 4].map((id) => ({ id, projectId: id <= 3 ? 1 : 2, folderId: id <= 3 ? 1 : 2, title: `Case ${id}` })));
  });
  afterEach(async () => {
    await knex?.destroy();
    await db?.drop();
  });

  it('a read run again is prepared once per connection, for every value, and answers the same', async () => {
    const first = await casesOf(1);
    expect(await prepared()).to.deep.equal([]);
    const second = await casesOf(1);
    const third = await casesOf(2);
    const fourth = await casesOf(1);
    expect(first.map((c) => c.id)).to.deep.equal([1, 2, 3]);
    expect(second).to.deep.equal(first);
    expect(fourth).to.deep.equal(first);
    expect(third.map((c) => [c.id, c.folder.name])).to.deep.equal([[4, 'F2']]);
    // The page and its include: two statements, each prepared once whatever the values.
    const statements = await prepared();
    expect(statements).to.have.length(2);
    expect(statements.map((s) => s.statement).join('\n')).to.include('repository_cases').and.to.include('repository_folders');
    for (const s of statements) expect(s.name).to.equal(preparedStatementsOf(knex).nameFor(s.statement.replace(/\$\d+/g, '?')));
  });

  it('aggregates are prepared like finds', async () => {
    const byFolder = () => runGroupBy(knex, testCase, parseGroupByArgs(testCase, { by: ['folderId'], _count: { _all: true }, orderBy: [{ folderId: 'asc' }] }));
    await byFolder();
    expect(await byFolder()).to.deep.equal([{ folderId: 1, _count: { _all: 3 } }, { folderId: 2, _count: { _all: 1 } }]);
    expect(await prepared()).to.have.length(1);
  });

  it('a prepared read still answers after rows change and after a column is added to its table', async () => {
    await casesOf(1);
    await casesOf(1);
    await knex(testCase.table).where({ id: 2 }).update({ title: 'Other' });
    expect((await casesOf(1)).map((c) => c.id)).to.deep.equal([1, 3]);
    await knex.schema.alterTable(testCase.table, (t) => t.text('added_later'));
    expect((await casesOf(1)).map((c) => c.id)).to.deep.equal([1, 3]);
    expect(await prepared()).to.have.length(2);
  });

  it('with a limit of 0 nothing is prepared', async () => {
    usePreparedStatements(knex, 0);
    for (let i = 0; i < 3; i++) expect((await casesOf(1)).map((c) => c.id)).to.deep.equal([1, 2, 3]);
    expect(await prepared()).to.deep.equal([]);
  });
});
