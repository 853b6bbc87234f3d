import { expect } from 'chai';
import {
  BulkWriteFailed, IndexNotFound, OperationNotSupported, SEARCH_TYPES,
  type Clause, type FacetRequest, type MaintenanceResult, type SearchEngine, type SearchRequest, type SearchResult, type TextField,
} from '../../../services/shared/search';
import { sampleCorpus as c, sampleDocuments, searchDocument, visibleDocuments } from './documents';

/**
 * The contract every search engine adapter passes (PostgreSQL, OpenSearch, Elasticsearch): one
 * behaviour behind the port, whichever engine answers. `open` gives an engine on fresh, empty
 * indices (a prefix of its own) and a `cleanup` that deletes them. Engine-neutral: refresh() after
 * every write, no assertion on score values (only on orders), on sizes or on versions strings.
 *
 * Semantics pinned here that the port leaves implicit:
 * - a text clause with several fields matches a document when one field matches (all words in that
 *   one field with `operator: 'and'`, the words in order in one field with `phrase`);
 * - words are analysed as English: lowercase, stop words dropped, snowball stems; a dotted Java name
 *   (`java.lang.NullPointerException`) is found by its parts (OpenSearch/Elasticsearch: a char filter
 *   splitting letters around `.`, since the standard tokenizer keeps such a name as one token);
 * - `prefix` on a keyword field is a literal, case-sensitive prefix of the value; on a text field a
 *   prefix of a (lowercase) word;
 * - `minimumShouldMatch` unset: at least one `should` when there is no must/filter;
 * - highlights: only the fields that matched, `<mark>` around the words, the rest escaped as HTML;
 * - facets: keyed by the field asked, each label counted once per matching document;
 * - dropping the live version is refused;
 * - administration: createMissingIndices creates the live version's (else version 1's) missing
 *   indices and nothing twice; deleteIndex takes only a name stats() lists, and a live index
 *   comes back empty behind its alias with the analyzer; a maintenance operation either works
 *   (its targets named) or throws OperationNotSupported naming the engine, asking nothing.
 */
export function describeSearchEngineContract(name: string, open: (ctx: Mocha.Context) => Promise<{ engine: SearchEngine; cleanup(): Promise<void> }>) {
  const visible: Clause = { kind: 'terms', field: 'projectId', values: ['p1'] };
  const ALL_TEXT: { field: TextField; boost: number }[] = [
    { field: 'title', boost: 2 }, { field: 'description', boost: 1 }, { field: 'content', boost: 1 }, { field: 'customFields.value', boost: 1 },
  ];
  const text = (query: string, opts: { fields?: { field: TextField; boost: number }[]; operator?: 'or' | 'and'; phrase?: boolean } = {}): Clause =>
    ({ kind: 'text', query, fields: opts.fields ?? ALL_TEXT, operator: opts.operator ?? 'or', phrase: opts.phrase ?? false });
  // (`should` is not a key here: chai's should() sits on every object's type.)
  const bool = (b: { must?: Clause[]; any?: Clause[]; filter?: Clause[]; mustNot?: Clause[]; minimumShouldMatch?: number }): Clause =>
    ({ kind: 'bool', must: b.must ?? [], should: b.any ?? [], filter: b.filter ?? [], mustNot: b.mustNot ?? [], ...(b.minimumShouldMatch !== undefined && { minimumShouldMatch: b.minimumShouldMatch }) });
  const request = (r: Partial<SearchRequest>): SearchRequest =>
    ({ types: SEARCH_TYPES, query: { kind: 'all' }, filter: [visible], sort: [], highlight: [], from: 0, size: 100, ...r });
  const ids = (r: SearchResult) => r.hits.map((h) => h.id);
  const sorted = (xs: string[]) => [...xs].sort();

  describe(`search engine contract: ${name}`, function () {
    this.timeout(120_000);

    describe('queries over the sample corpus (p1 visible, p2 not)', () => {
      let engine: SearchEngine;
      let cleanup: () => Promise<void>;
      const search = (r: Partial<SearchRequest>) => engine.search(request(r));
      const found = async (r: Partial<SearchRequest>) => sorted(ids(await search(r)));

      before(async function () {
        ({ engine, cleanup } = await open(this));
        await engine.ensureVersion(1);
        await engine.write(1, { upsert: sampleDocuments, remove: [] }, { search: '100' });
        await engine.switchAlias(1);
        await engine.refresh();
      });
      after(async () => {
        await cleanup?.();
      });

      it('a word finds the documents having it in any field, of the visible project only; hits carry type, project and the document', async () => {
        const r = await search({ query: text('login') });
        expect(sorted(ids(r))).to.deep.equal(['c1', 'c2', 'f1']);
        expect(r.total).to.equal(3);
        expect(r.tookMs).to.be.a('number').at.least(0);
        const f1 = r.hits.find((h) => h.id === 'f1')!;
        expect(f1.type).to.equal('failures');
        expect(f1.projectId).to.equal('p1');
        expect(f1.score).to.be.a('number').above(0);
        expect(f1.document).to.deep.equal(c.npeFailure);
      });

      it('the access filter: documents of other projects are never counted or listed; without it (administrator) they are', async () => {
        expect((await search({})).total).to.equal(visibleDocuments.length);
        expect(await found({ filter: [{ kind: 'terms', field: 'projectId', values: ['p2'] }] })).to.deep.equal(['c9', 'f2']);
        expect((await search({ filter: [] })).total).to.equal(sampleDocuments.length);
        expect((await search({ filter: [{ kind: 'terms', field: 'projectId', values: [] }] })).total, 'no readable project: nothing').to.equal(0);
        const npe = await search({ query: text('NullPointerException'), highlight: ['title', 'content'] });
        expect(ids(npe)).to.deep.equal(['f1']);
        expect(JSON.stringify(npe)).not.to.match(/LoginHandler|Back office|secret-tag/);
      });

      it('relevance: a title match ranks above a description-only match; boosts decide between fields', async () => {
        const r = await search({ query: text('login', { fields: [{ field: 'title', boost: 2 }, { field: 'description', boost: 1 }] }) });
        expect(ids(r).indexOf('c1')).to.be.lessThan(ids(r).indexOf('c2'));
        expect(ids(r).slice().sort()).to.deep.equal(['c1', 'c2', 'f1']);
        const flipped = await search({ query: text('password', { fields: [{ field: 'title', boost: 1 }, { field: 'content', boost: 20 }] }), types: ['repository_cases'] });
        expect(ids(flipped)).to.include.members(['c1', 'c2']);
        const byDescription = await search({ query: text('login', { fields: [{ field: 'title', boost: 1 }, { field: 'description', boost: 50 }] }), types: ['repository_cases'] });
        expect(ids(byDescription)[0], 'description boosted 50×').to.equal('c2');
      });

      it('stemming: "tests" finds "test", "failing" finds "failed" and "failed" finds "Failing"', async () => {
        expect(await found({ query: text('tests') })).to.include('c3');
        expect(await found({ query: text('failing') })).to.include.members(['f1', 'r1']);
        expect(await found({ query: text('failed') })).to.include.members(['f1', 'r1']);
        expect(await found({ query: text('credential', { fields: [{ field: 'title', boost: 1 }] }) })).to.deep.equal(['c1']);
      });

      it('stop words do not count: "the" alone finds nothing, "the login" ranks like "login"', async () => {
        expect((await search({ query: text('the') })).total).to.equal(0);
        expect((await search({ query: text('the', { phrase: true }) })).total).to.equal(0);
        const plain = await search({ query: text('login') });
        const withStop = await search({ query: text('the login') });
        expect(ids(withStop)).to.deep.equal(ids(plain));
        expect(ids(await search({ query: text('the login', { operator: 'and' }) }))).to.deep.equal(ids(plain));
      });

      it('operator and: every word in one field; or: any word', async () => {
        expect(await found({ query: text('login password', { operator: 'and' }) })).to.deep.equal(['c1', 'c2']);
        expect(await found({ query: text('login password') })).to.deep.equal(['c1', 'c2', 'f1']);
        expect((await search({ query: text('login coupons', { operator: 'and' }) })).total).to.equal(0);
      });

      it('phrase: the words in order', async () => {
        expect(await found({ query: text('valid credentials', { phrase: true }) })).to.deep.equal(['c1', 'f1']);
        expect((await search({ query: text('credentials valid', { phrase: true }) })).total).to.equal(0);
        expect(await found({ query: text('Forgot password', { phrase: true }) })).to.deep.equal(['c2']);
      });

      it('a dotted Java name is found by its class name, its whole name and in custom field values', async () => {
        expect(await found({ query: text('NullPointerException') })).to.deep.equal(['f1']);
        expect(await found({ query: text('java.lang.NullPointerException', { operator: 'and' }) })).to.deep.equal(['f1']);
        expect(await found({ query: text('LoginService', { fields: [{ field: 'content', boost: 1 }] }) })).to.deep.equal(['f1']);
        // An anonymous inner class's frame (`TokenCache$2.refreshToken`): a dot after a digit, before a letter.
        expect(await found({ query: text('refreshToken', { fields: [{ field: 'content', boost: 1 }] }) })).to.deep.equal(['f1']);
        expect(await found({ query: text('authentication', { fields: [{ field: 'customFields.value', boost: 1 }] }) })).to.deep.equal(['c1']);
      });

      it('terms on tags, type, status and a custom field name; request types narrow the indices', async () => {
        expect(await found({ filter: [visible, { kind: 'terms', field: 'tags', values: ['auth'] }] })).to.deep.equal(['c1', 'c2']);
        expect(await found({ filter: [visible, { kind: 'terms', field: 'tags', values: ['smoke', 'export'] }] })).to.deep.equal(['c1', 'c3']);
        expect(await found({ filter: [visible, { kind: 'terms', field: 'type', values: ['failures'] }] })).to.deep.equal(['f1']);
        expect(await found({ types: ['failures', 'test_runs'] })).to.deep.equal(['f1', 'r1']);
        expect(await found({ query: { kind: 'terms', field: 'failureType', values: ['NullPointerException'] } })).to.deep.equal(['f1']);
        expect(await found({ query: { kind: 'terms', field: 'customFields.name', values: ['Priority'] } })).to.deep.equal(['c1', 'c2']);
        expect(await found({ query: { kind: 'terms', field: 'title.keyword', values: ['Release 2.4 regression'] } })).to.deep.equal(['r1']);
        expect(await found({ query: { kind: 'terms', field: 'tags', values: ['Auth'] } }), 'keywords are exact').to.deep.equal([]);
      });

      it('range on dates, bounds inclusive or not', async () => {
        expect(await found({ query: { kind: 'range', field: 'createdAt', gte: '2024-02-01T00:00:00Z', lt: '2024-03-01T00:00:00Z' } })).to.deep.equal(['c3', 'c4', 's1']);
        expect(await found({ query: { kind: 'range', field: 'createdAt', gt: '2024-01-10T09:00:00Z', lte: '2024-01-20T09:00:00Z' } })).to.deep.equal(['c2']);
        expect(await found({ query: { kind: 'range', field: 'executedAt', lte: '2024-03-02T23:59:59Z' } })).to.deep.equal(['f1']);
        expect(await found({ query: { kind: 'range', field: 'updatedAt', gte: '2024-01-01T00:00:00Z' } })).to.deep.equal(['c1']);
      });

      it('prefix on a keyword (literal, case-sensitive) and on a text field (a word)', async () => {
        expect(await found({ query: { kind: 'prefix', field: 'folder', value: 'Web /' } })).to.deep.equal(['c1', 'c2']);
        expect(await found({ query: { kind: 'prefix', field: 'folder', value: 'web /' } })).to.deep.equal([]);
        expect(await found({ query: { kind: 'prefix', field: 'title.keyword', value: 'Export' } })).to.deep.equal(['c3']);
        expect(await found({ query: { kind: 'prefix', field: 'tags', value: 'reg' } })).to.deep.equal(['c3']);
        expect(await found({ query: { kind: 'prefix', field: 'title', value: 'expo' } })).to.deep.equal(['c3']);
        expect(await found({ query: { kind: 'prefix', field: 'content', value: 'dashb' } })).to.deep.equal(['c1']);
      });

      it('quotes, backslashes, % and _ in terms and prefixes are literal', async () => {
        expect(await found({ query: { kind: 'terms', field: 'tags', values: ["o'brien"] } })).to.deep.equal(['c4']);
        expect(await found({ query: { kind: 'terms', field: 'tags', values: ['back\\slash'] } })).to.deep.equal(['c4']);
        expect(await found({ query: { kind: 'terms', field: 'tags', values: ['50%'] } })).to.deep.equal([]);
        expect(await found({ query: { kind: 'prefix', field: 'tags', value: '50%_' } })).to.deep.equal(['c4']);
        expect(await found({ query: { kind: 'prefix', field: 'folder', value: 'Cart / 50%_' } })).to.deep.equal(['c4']);
        expect(await found({ query: { kind: 'prefix', field: 'folder', value: '%' } })).to.deep.equal([]);
        expect(await found({ query: { kind: 'prefix', field: 'folder', value: '_' } })).to.deep.equal([]);
        expect(await found({ query: { kind: 'prefix', field: 'tags', value: 'back\\' } })).to.deep.equal(['c4']);
        expect(await found({ query: { kind: 'prefix', field: 'creator', value: "Dan O'" } })).to.deep.equal(['c4']);
        expect(await found({ query: text("O'Brien's 50% \\ \" & | ! ( ) : * <-> \\'") })).to.include('c4');
        expect(await found({ query: text("' OR 1=1 --") })).not.to.include('f2');
      });

      it('bool: must, filter, mustNot, should with and without minimumShouldMatch', async () => {
        expect(await found({ query: bool({ must: [text('login')], mustNot: [{ kind: 'terms', field: 'tags', values: ['smoke'] }] }) })).to.deep.equal(['c2', 'f1']);
        expect(await found({ query: bool({ any: [text('login', { fields: [{ field: 'title', boost: 1 }] }), text('export', { fields: [{ field: 'title', boost: 1 }] })] }) })).to.deep.equal(['c1', 'c3']);
        const facts: Clause[] = [
          { kind: 'terms', field: 'tags', values: ['auth'] }, { kind: 'terms', field: 'state', values: ['Active'] }, { kind: 'terms', field: 'template', values: ['Steps'] },
        ];
        expect(await found({ query: bool({ any: facts, minimumShouldMatch: 2 }) })).to.deep.equal(['c1', 'c2']);
        expect(await found({ query: bool({ any: facts, minimumShouldMatch: 3 }) })).to.deep.equal(['c1']);
        expect(await found({ query: bool({ must: [text('login')], filter: [{ kind: 'terms', field: 'type', values: ['failures'] }] }) })).to.deep.equal(['f1']);
        expect(await found({ query: bool({ mustNot: [{ kind: 'terms', field: 'folder', values: ['Web / Authentication'] }], filter: [{ kind: 'terms', field: 'type', values: ['repository_cases'] }] }) }), 'a null folder is not excluded by mustNot')
          .to.deep.equal(['c3', 'c4']);
        expect(await found({ query: bool({ must: [bool({ any: [{ kind: 'terms', field: 'state', values: ['Draft'] }, { kind: 'terms', field: 'tags', values: ['export'] }] })] }) })).to.deep.equal(['c2', 'c3']);
      });

      it('sort by a date, a keyword, _score; ties broken the same way on every page', async () => {
        const cases = { types: ['repository_cases'] as const };
        expect(ids(await search({ ...cases, sort: [{ field: 'createdAt', order: 'asc' }] }))).to.deep.equal(['c1', 'c2', 'c3', 'c4']);
        expect(ids(await search({ ...cases, sort: [{ field: 'createdAt', order: 'desc' }] }))).to.deep.equal(['c4', 'c3', 'c2', 'c1']);
        expect(ids(await search({ ...cases, sort: [{ field: 'title.keyword', order: 'asc' }] }))).to.deep.equal(['c4', 'c3', 'c1', 'c2']);
        expect(ids(await search({ types: ['failures', 'test_runs'], sort: [{ field: 'executedAt', order: 'desc' }] }))).to.deep.equal(['r1', 'f1']);
        expect(ids(await search({ ...cases, sort: [{ field: 'state', order: 'desc' }, { field: 'createdAt', order: 'desc' }] }))).to.deep.equal(['c2', 'c4', 'c3', 'c1']);
        const scored = await search({ query: text('login password'), sort: [{ field: '_score', order: 'desc' }] });
        const scores = scored.hits.map((h) => h.score!);
        expect(scores).to.deep.equal([...scores].sort((a, b) => b - a));
        expect(scored.hits.length).to.equal(3);
      });

      it('from/size pages: exact total on every page, every document once', async () => {
        const sort = [{ field: 'createdAt' as const, order: 'asc' as const }];
        const whole = ids(await search({ sort }));
        expect(whole).to.have.length(visibleDocuments.length);
        const seen: string[] = [];
        for (let from = 0; from < whole.length; from += 3) {
          const page = await search({ sort, from, size: 3 });
          expect(page.total).to.equal(visibleDocuments.length);
          seen.push(...ids(page));
        }
        expect(seen).to.deep.equal(whole);
        const tied = ids(await search({ sort: [{ field: 'projectId', order: 'asc' }] }));
        const tiedPages = [...ids(await search({ sort: [{ field: 'projectId', order: 'asc' }], size: 4 })), ...ids(await search({ sort: [{ field: 'projectId', order: 'asc' }], from: 4, size: 4 }))];
        expect(tiedPages).to.deep.equal(tied);
        const beyond = await search({ sort, from: 50, size: 10 });
        expect(beyond.hits).to.deep.equal([]);
        expect(beyond.total).to.equal(visibleDocuments.length);
      });

      it('highlight: <mark> around the words of the fields that matched, the stored text escaped as HTML', async () => {
        const r = await search({ query: text('login'), highlight: ['title', 'description', 'content'] });
        const c1 = r.hits.find((h) => h.id === 'c1')!;
        expect(c1.highlight.title!.join(' ')).to.contain('<mark>Login</mark>');
        expect(c1.highlight.content!.join(' ')).to.contain('<mark>login</mark>');
        expect(c1.highlight.description, 'c1 has no "login" in its description').to.equal(undefined);
        const c2 = r.hits.find((h) => h.id === 'c2')!;
        expect(c2.highlight.description!.join(' ')).to.contain('<mark>login</mark>');
        expect(c2.highlight.title).to.equal(undefined);
        const html = await search({ query: text('alert'), highlight: ['content'] });
        expect(ids(html)).to.deep.equal(['c3']);
        const fragment = html.hits[0].highlight.content!.join(' ');
        expect(fragment).to.contain('<mark>alert</mark>');
        expect(fragment).to.contain('&lt;script&gt;');
        expect(fragment).not.to.match(/<script|<\/script/);
        const none = await search({ query: text('login') });
        expect(none.hits[0].highlight).to.deep.equal({});
        const stemmed = await search({ query: text('failing'), highlight: ['description'], types: ['failures'] });
        expect(stemmed.hits[0].highlight.description!.join(' ')).to.contain('<mark>failed</mark>');
      });

      it('facets: per label, only matching and visible documents', async () => {
        const facets = (r: Partial<FacetRequest>) => engine.facets({ types: SEARCH_TYPES, query: { kind: 'all' }, filter: [visible], fields: ['tags', 'folder', 'template', 'state'], size: 20, ...r });
        const all = await facets({});
        expect(all.tags).to.deep.equal({ auth: 2, smoke: 1, export: 1, regression: 1, release: 1, checkout: 1, '50%_off': 1, "o'brien": 1, 'back\\slash': 1 });
        expect(all.folder).to.deep.equal({ 'Web / Authentication': 2, Reports: 1, 'Cart / 50%_off': 1 });
        expect(all.template).to.deep.equal({ Steps: 2, Text: 2 });
        expect(all.state).to.deep.equal({ Active: 3, Draft: 1, 'In progress': 1, Done: 1 });
        const login = await facets({ query: text('login') });
        expect(login.tags).to.deep.equal({ auth: 2, smoke: 1 });
        expect(login.folder).to.deep.equal({ 'Web / Authentication': 2 });
        const top = await facets({ size: 1, fields: ['tags'] });
        expect(top).to.deep.equal({ tags: { auth: 2 } });
        const runs = await facets({ types: ['test_runs'], fields: ['tags', 'folder'] });
        expect(runs).to.deep.equal({ tags: { release: 1 }, folder: {} });
        const admin = await facets({ filter: [], fields: ['tags'] });
        expect(admin.tags).to.include({ auth: 3, smoke: 3, 'secret-tag': 2 });
      });
    });

    describe('writes, checkpoints and versions', () => {
      let engine: SearchEngine;
      let cleanup: () => Promise<void>;
      beforeEach(async function () {
        ({ engine, cleanup } = await open(this));
      });
      afterEach(async () => {
        await cleanup?.();
      });
      const titles = async () => (await engine.search(request({ filter: [], sort: [{ field: 'createdAt', order: 'asc' }] }))).hits.map((h) => h.document.title);

      it('ensureVersion is idempotent and keeps what was written; nothing is live before the first switch', async () => {
        expect(await engine.versions()).to.deep.equal([]);
        expect(await engine.liveVersion()).to.equal(null);
        await engine.ensureVersion(1);
        await engine.ensureVersion(1);
        expect(await engine.versions()).to.deep.equal([1]);
        await engine.write(1, { upsert: [c.loginCase], remove: [] }, { search: '1' });
        await engine.ensureVersion(1);
        await engine.refresh();
        expect(await engine.count(1, 'repository_cases')).to.equal(1);
        expect(await engine.readCheckpoints(1)).to.deep.equal({ search: '1' });
        expect(await engine.liveVersion()).to.equal(null);
        await engine.switchAlias(1);
        expect(await engine.liveVersion()).to.equal(1);
        expect(engine.aliasOf('failures')).to.match(/failures$/);
      });

      it('write upserts (a second write replaces the document), removes (a missing one is no error), the document comes back as written', async () => {
        await engine.ensureVersion(1);
        await engine.switchAlias(1);
        const first = searchDocument('repository_cases', 'x1', { title: 'Alpha checkout', tags: ['a'] });
        await engine.write(1, { upsert: [first, c.session], remove: [] });
        await engine.refresh();
        expect(await titles()).to.deep.equal(['Alpha checkout', c.session.title]);
        const second = { ...first, title: 'Beta checkout', tags: ['b', 'c'], customFields: [{ name: 'Owner', value: 'Zoë' }], updatedAt: '2024-05-01T00:00:00.000Z' };
        await engine.write(1, { upsert: [second], remove: [] });
        await engine.refresh();
        expect((await engine.search(request({ filter: [], query: text('alpha') }))).total).to.equal(0);
        const beta = await engine.search(request({ filter: [], query: text('beta') }));
        expect(beta.hits.map((h) => h.document)).to.deep.equal([second]);
        expect(await engine.count(1, 'repository_cases')).to.equal(1);
        await engine.write(1, { upsert: [], remove: [{ type: 'repository_cases', id: 'x1' }, { type: 'failures', id: 'missing' }, { type: 'sessions', id: 'x1' }] });
        await engine.refresh();
        expect(await titles()).to.deep.equal([c.session.title]);
        expect(await engine.count(1, 'repository_cases')).to.equal(0);
        expect(await engine.count(1, 'sessions')).to.equal(1);
      });

      it('the same id in two types is two documents', async () => {
        await engine.ensureVersion(1);
        await engine.switchAlias(1);
        await engine.write(1, { upsert: [searchDocument('repository_cases', '7', { title: 'Case seven' }), searchDocument('comments', '7', { title: 'Comment seven' })], remove: [] });
        await engine.write(1, { upsert: [], remove: [{ type: 'comments', id: '7' }] });
        await engine.refresh();
        expect(await titles()).to.deep.equal(['Case seven']);
      });

      it('checkpoints move with the writes they cover, per version; a refused write moves none of them', async () => {
        await engine.ensureVersion(1);
        await engine.ensureVersion(2);
        expect(await engine.readCheckpoints(1)).to.deep.equal({});
        await engine.write(1, { upsert: [c.loginCase], remove: [] }, { search: '10' });
        await engine.write(1, { upsert: [], remove: [] }, { 'search#0': '5', 'search#1': '7' });
        await engine.write(1, { upsert: [c.passwordResetCase], remove: [] }, { search: '12' });
        await engine.write(2, { upsert: [c.loginCase], remove: [] }, { search: '3' });
        expect(await engine.readCheckpoints(1)).to.deep.equal({ search: '12', 'search#0': '5', 'search#1': '7' });
        expect(await engine.readCheckpoints(2)).to.deep.equal({ search: '3' });
        const bad = searchDocument('failures', 'bad', { createdAt: 'not a date' });
        const error = await engine.write(1, { upsert: [c.exportCase, bad], remove: [] }, { search: '13', 'search#0': '6' }).then(() => null, (e: unknown) => e);
        expect(error).to.be.instanceOf(BulkWriteFailed);
        expect((error as BulkWriteFailed).failures.map((f) => `${f.type}/${f.id}`)).to.deep.equal(['failures/bad']);
        expect(await engine.readCheckpoints(1)).to.deep.equal({ search: '12', 'search#0': '5', 'search#1': '7' });
        await engine.refresh();
        expect(await engine.count(1, 'failures')).to.equal(0);
      });

      it('checkpoints only move forward: a write naming an earlier position (a late retry) keeps the later one, and moves the keys it passes', async () => {
        await engine.ensureVersion(1);
        await engine.write(1, { upsert: [], remove: [] }, { search: '142', 'search#0': '9' });
        await engine.write(1, { upsert: [c.loginCase], remove: [] }, { search: '141', 'search#0': '10', 'search#1': '3' });
        expect(await engine.readCheckpoints(1)).to.deep.equal({ search: '142', 'search#0': '10', 'search#1': '3' });
        // Compared as numbers, not as text ('99' < '100'), beyond 2^53 too.
        await engine.write(1, { upsert: [], remove: [] }, { search: '1000' });
        await engine.write(1, { upsert: [], remove: [] }, { search: '999' });
        await engine.write(1, { upsert: [], remove: [] }, { 'search#0': '9007199254740993' });
        await engine.write(1, { upsert: [], remove: [] }, { 'search#0': '9007199254740992' });
        expect(await engine.readCheckpoints(1)).to.deep.equal({ search: '1000', 'search#0': '9007199254740993', 'search#1': '3' });
        await engine.refresh();
        expect(await engine.count(1, 'repository_cases'), 'the documents of a write whose checkpoint stays are written').to.equal(1);
      });

      it('facets count a label once per document', async () => {
        await engine.ensureVersion(1);
        await engine.switchAlias(1);
        await engine.write(1, { upsert: [searchDocument('repository_cases', 'd1', { tags: ['smoke', 'smoke', 'ui'] }), searchDocument('repository_cases', 'd2', { tags: ['smoke'] })], remove: [] });
        await engine.refresh();
        const f = await engine.facets({ types: ['repository_cases'], query: { kind: 'all' }, filter: [], fields: ['tags'], size: 10 });
        expect(f).to.deep.equal({ tags: { smoke: 2, ui: 1 } });
      });

      it('versions side by side: search reads the live one until the switch; the old one can then be dropped, the live one cannot', async () => {
        await engine.ensureVersion(1);
        await engine.write(1, { upsert: [searchDocument('repository_cases', 'a', { title: 'Old checkout' })], remove: [] }, { search: '50' });
        await engine.switchAlias(1);
        await engine.ensureVersion(2);
        await engine.write(2, { upsert: [searchDocument('repository_cases', 'a', { title: 'New checkout' }), searchDocument('failures', 'b', { title: 'New failure' })], remove: [] }, { search: '20' });
        await engine.refresh();
        expect(await engine.versions()).to.deep.equal([1, 2]);
        expect(await engine.liveVersion()).to.equal(1);
        expect(await titles()).to.deep.equal(['Old checkout']);
        expect(await engine.count(2, 'repository_cases')).to.equal(1);
        await engine.switchAlias(2);
        expect(await engine.liveVersion()).to.equal(2);
        expect(await titles()).to.have.members(['New checkout', 'New failure']);
        const refused = await engine.dropVersion(2).then(() => null, (e: unknown) => e);
        expect(refused, 'the live version is not dropped').to.be.instanceOf(Error);
        await engine.dropVersion(1);
        expect(await engine.versions()).to.deep.equal([2]);
        expect(await engine.readCheckpoints(2)).to.deep.equal({ search: '20' });
        expect(await titles()).to.have.members(['New checkout', 'New failure']);
        await engine.ensureVersion(3);
        expect(await engine.versions()).to.deep.equal([2, 3]);
        expect(await engine.readCheckpoints(3)).to.deep.equal({});
      });

      it('stats: one entry per type and version, named <alias> and <alias>_v<N>, with document counts and the live flag', async () => {
        await engine.ensureVersion(1);
        await engine.write(1, { upsert: [c.loginCase, c.passwordResetCase, c.npeFailure], remove: [] });
        await engine.switchAlias(1);
        await engine.ensureVersion(2);
        await engine.refresh();
        const stats = await engine.stats();
        expect(stats).to.have.length(SEARCH_TYPES.length * 2);
        for (const type of SEARCH_TYPES) {
          for (const version of [1, 2]) {
            const s = stats.find((x) => x.type === type && x.version === version)!;
            expect(s, `${type} v${version}`).to.not.equal(undefined);
            expect(s.alias).to.equal(engine.aliasOf(type));
            expect(s.index).to.equal(`${engine.aliasOf(type)}_v${version}`);
            expect(s.live).to.equal(version === 1);
            expect(s.sizeBytes).to.be.a('number').at.least(0);
            expect(s.health).to.be.oneOf(['green', 'yellow']);
          }
        }
        const docs = (type: string, version: number) => stats.find((x) => x.type === type && x.version === version)!.documents;
        expect(docs('repository_cases', 1)).to.equal(2);
        expect(docs('failures', 1)).to.equal(1);
        expect(docs('sessions', 1)).to.equal(0);
        expect(docs('repository_cases', 2)).to.equal(0);
        expect(await engine.count(1, 'repository_cases')).to.equal(2);
        expect((await engine.info()).engine).to.equal(engine.engine);
      });

      it('a write larger than the bulk size is applied whole; total is exact past 10,000-like caps', async () => {
        await engine.ensureVersion(1);
        await engine.switchAlias(1);
        const many = Array.from({ length: 1_200 }, (_, i) => searchDocument('comments', `m${i}`, { title: `Comment ${i} about checkout`, tags: [`t${i % 3}`] }));
        await engine.write(1, { upsert: many, remove: [] }, { search: '1200' });
        await engine.refresh();
        expect(await engine.count(1, 'comments')).to.equal(1_200);
        const r = await engine.search(request({ filter: [], query: text('checkout'), size: 5 }));
        expect(r.total).to.equal(1_200);
        expect(r.hits).to.have.length(5);
        const f = await engine.facets({ types: ['comments'], query: { kind: 'all' }, filter: [], fields: ['tags'], size: 10 });
        expect(f.tags).to.deep.equal({ t0: 400, t1: 400, t2: 400 });
        expect(await engine.readCheckpoints(1)).to.deep.equal({ search: '1200' });
      });

      describe('administration', () => {
        const indexOf = (type: (typeof SEARCH_TYPES)[number], version: number) => `${engine.aliasOf(type)}_v${version}`;
        /** The operation's result, or null when the engine says it has no such thing (naming itself). */
        const supported = async (operation: () => Promise<MaintenanceResult>): Promise<MaintenanceResult | null> => {
          const outcome = await operation().then((r) => r, (e: unknown) => e);
          if (outcome instanceof OperationNotSupported) {
            expect(outcome.engine).to.equal(engine.engine);
            return null;
          }
          if (outcome instanceof Error) throw outcome;
          return outcome as MaintenanceResult;
        };

        it('createMissingIndices: version 1 with nothing live (no alias switched), then nothing twice; a live version\'s indices are kept', async () => {
          const first = await engine.createMissingIndices();
          expect(first).to.deep.equal({ version: 1, created: SEARCH_TYPES.map((t) => indexOf(t, 1)), aliasesRepaired: [] });
          expect(await engine.versions()).to.deep.equal([1]);
          expect(await engine.liveVersion(), 'an empty version is not made live').to.equal(null);
          expect(await engine.createMissingIndices()).to.deep.equal({ version: 1, created: [], aliasesRepaired: [] });
          await engine.ensureVersion(2);
          await engine.write(2, { upsert: [c.loginCase], remove: [] }, { search: '9' });
          await engine.switchAlias(2);
          expect(await engine.createMissingIndices()).to.deep.equal({ version: 2, created: [], aliasesRepaired: [] });
          await engine.refresh();
          expect(await engine.count(2, 'repository_cases')).to.equal(1);
          expect(await engine.readCheckpoints(2)).to.deep.equal({ search: '9' });
        });

        it('deleteIndex: a live index comes back empty behind its alias, the other types untouched; it takes new documents with the analyzer', async () => {
          await engine.ensureVersion(1);
          await engine.write(1, { upsert: sampleDocuments, remove: [] }, { search: '100' });
          await engine.switchAlias(1);
          await engine.refresh();
          const cases = sampleDocuments.filter((d) => d.type === 'repository_cases').length;
          expect(await engine.count(1, 'repository_cases')).to.equal(cases);
          await engine.deleteIndex(indexOf('repository_cases', 1));
          await engine.refresh();
          expect(await engine.count(1, 'repository_cases')).to.equal(0);
          expect(await engine.count(1, 'failures')).to.equal(sampleDocuments.filter((d) => d.type === 'failures').length);
          const listed = (await engine.stats()).find((x) => x.index === indexOf('repository_cases', 1));
          expect(listed).to.deep.include({ live: true, documents: 0, type: 'repository_cases', version: 1 });
          expect(await engine.liveVersion()).to.equal(1);
          expect(await engine.readCheckpoints(1), 'checkpoints are not the index\'s').to.deep.equal({ search: '100' });
          expect((await engine.search(request({ filter: [], types: ['repository_cases'] }))).total).to.equal(0);
          await engine.write(1, { upsert: [searchDocument('repository_cases', 'back', { title: 'Running tests again' })], remove: [] });
          await engine.refresh();
          // Stemmed: the analyzer of the recreated index is the custom one.
          expect(ids(await engine.search(request({ filter: [], query: text('runs test'), types: ['repository_cases'] })))).to.deep.equal(['back']);
        });

        it('deleteIndex refuses a name stats() does not list: an alias, another version, another prefix\'s, garbage', async () => {
          await engine.ensureVersion(1);
          await engine.switchAlias(1);
          for (const name of [engine.aliasOf('failures'), indexOf('failures', 7), `other_${indexOf('failures', 1)}`, '*', '', '../_all']) {
            const error = await engine.deleteIndex(name).then(() => null, (e: unknown) => e);
            expect(error, name).to.be.instanceOf(IndexNotFound);
          }
          expect((await engine.stats()).filter((x) => x.version === 1)).to.have.length(SEARCH_TYPES.length);
        });

        it('maintenance: force merge works over every version; cache clear, refresh and mapping update work or name the engine that has no such thing', async () => {
          await engine.ensureVersion(1);
          await engine.write(1, { upsert: sampleDocuments, remove: [] }, { search: '1' });
          await engine.switchAlias(1);
          await engine.write(1, { upsert: sampleDocuments.map((d) => ({ ...d, title: `${d.title} (edited)` })), remove: [{ type: 'comments', id: 'none' }] });
          await engine.ensureVersion(2);
          const merged = await engine.forceMerge(1);
          expect(merged.targets.length).to.be.at.least(2);
          expect(merged.targets.join(' ')).to.contain('_v1').and.contain('_v2');
          for (const operation of [() => engine.clearCache(), () => engine.refreshAll(), () => engine.updateMapping()]) {
            const result = await supported(operation);
            if (result) expect(result.targets.join(' ')).to.contain('_v1').and.contain('_v2');
          }
          await engine.refresh();
          expect((await engine.search(request({ filter: [], query: text('edited') }))).total).to.equal(sampleDocuments.length);
          expect(await engine.readCheckpoints(1)).to.deep.equal({ search: '1' });
        });

        it('refreshAll, where the engine has it, makes what was written searchable', async () => {
          await engine.ensureVersion(1);
          await engine.switchAlias(1);
          await engine.write(1, { upsert: [c.loginCase], remove: [] });
          if (await supported(() => engine.refreshAll())) expect((await engine.search(request({ filter: [] }))).total).to.equal(1);
        });

        it('cluster health and node statistics: a status with its reasons, at least one node with numbers or nulls', async () => {
          await engine.ensureVersion(1);
          await engine.write(1, { upsert: sampleDocuments, remove: [] });
          await engine.refresh();
          const health = await engine.clusterHealth();
          expect(health.status).to.be.oneOf(['green', 'yellow', 'red']);
          expect(health.reasons).to.be.an('array');
          expect(health.nodes).to.be.at.least(1);
          const nodes = await engine.nodeStats();
          expect(nodes.length).to.be.at.least(1);
          for (const node of nodes) {
            expect(node.id).to.be.a('string').and.not.equal('');
            expect(node.name).to.be.a('string').and.not.equal('');
            if (node.heap) expect(node.heap.usedBytes).to.be.at.most(node.heap.maxBytes);
            if (node.disk) expect(node.disk.freeBytes).to.be.at.most(node.disk.totalBytes);
            for (const total of [node.documents, node.indexingTotal, node.searchTotal]) if (total !== null) expect(total).to.be.at.least(0);
          }
          const documents = nodes.reduce((sum, n) => sum + (n.documents ?? 0), 0);
          expect(documents).to.be.at.least(sampleDocuments.length);
        });
      });
    });
  });
}
