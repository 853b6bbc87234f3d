import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { axeViolations, launchChromium, SCREENSHOTS as SHOTS, serious } from '../support/browser';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { dropIndices, requireOpenSearch, SEARCH_TEST_URL, uniqueIndexPrefix } from '../support/search';
import { HttpClient, startServer, type RunningServer } from '../support/server';
import { waitUntil } from '../support/wait';

const ADMIN = { email: 'search-page-admin@example.com', password: 'search page password' };
const USER = { email: 'search-page-user@example.com', password: 'search page user password' };

/**
 * /admin/search in headless Chromium against a started server (every role in one process), on
 * PostgreSQL search and on a real OpenSearch: status, the indices listed, a delete refused without
 * the typed confirmation, a reindex whose progress reaches 100, and a non-admin kept out.
 * Slow: launches Chromium and, on each engine (PostgreSQL, OpenSearch), starts the service as a process, then drives a full reindex through the page until it reaches 100 %
 */
for (const engine of ['postgres', 'opensearch'] as const) {
  describe(`search administration page (/admin/search) in headless Chromium, ${engine === 'postgres' ? 'PostgreSQL search' : 'OpenSearch'}`, function () {
    this.timeout(240_000);
    const prefix = uniqueIndexPrefix();
    let db: TestDatabase;
    let dataDir: string;
    let server: RunningServer;
    let browser: Browser;
    let admin: HttpClient;

    before(async function () {
      if (engine === 'opensearch') await requireOpenSearch(this, 'the search page on OpenSearch');
      browser = await launchChromium(this, 'the search page in Chromium');
      db = await createTestDatabase(`search_page_${engine}`);
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-search-page-'));
      server = await startServer({
        DATABASE_URL: db.url, DATA_DIR: dataDir, ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password,
        SESSION_SECRET: 's'.repeat(40), TOKEN_SECRET: 't'.repeat(40), SEARCH_INDEX_PREFIX: prefix,
        ...(engine === 'opensearch' ? { SEARCH_URL: SEARCH_TEST_URL, SEARCH_REFRESH_INTERVAL: '200ms' } : { SEARCH_URL: '' }),
      });
      admin = new HttpClient(server.url);
      expect((await admin.post('/api/auth/login', ADMIN)).status).to.equal(200);
      for (const name of ['Alpha shop', 'Beta shop']) expect((await admin.post('/api/model/project/create', { data: { name } })).status).to.equal(201);
      const user = await admin.post('/api/model/user/create', { data: { email: USER.email, name: 'Sam User', password: USER.password, access: 'USER' } });
      expect(user.status, JSON.stringify(user.body)).to.equal(201);
    });
    after(async function () {
      if (this.currentTest?.state === 'failed' && server) console.log(server.output().slice(-4000));
      await browser?.close();
      await server?.stop();
      await db?.drop();
      if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
      if (engine === 'opensearch') await dropIndices(SEARCH_TEST_URL, prefix).catch(() => undefined);
    });

    async function signedIn(who: { email: string; password: string }): Promise<{ page: Page; problems: string[]; close(): Promise<void> }> {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('request', (r) => {
        if (!r.url().startsWith(server.url)) problems.push(`foreign request ${r.url()}`);
      });
      page.on('pageerror', (e) => problems.push(`page error ${e.message}`));
      await page.goto(`${server.url}/login?next=%2Fadmin%2Fsearch`);
      await page.getByLabel('E-mail').fill(who.email);
      await page.getByLabel('Password').fill(who.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(/\/admin\/search$/);
      return { page, problems, close: () => context.close() };
    }

    it('shows the connection, health and indices; refuses a delete without the typed name; a reindex reaches 100', async () => {
      const { page, problems, close } = await signedIn(ADMIN);
      await page.getByRole('heading', { name: 'Search administration', level: 1 }).waitFor();
      // Connection and health.
      await page.locator('#conn-status').getByText(/^answering/).waitFor({ timeout: 30_000 });
      expect(await page.locator('#conn-engine-in-use').textContent()).to.match(engine === 'postgres' ? /^postgres/ : /^opensearch/);
      expect(await page.locator('#health-status').textContent()).to.match(/^(green|yellow|red)$/);
      // Node statistics: PostgreSQL knows no heap; OpenSearch does.
      const heap = await page.getByRole('table', { name: 'Node statistics' }).locator('tbody tr td').first().textContent();
      expect(heap).to.match(engine === 'postgres' ? /^—$/ : /^[\d.]+ [KMGT]?B of [\d.]+ [KMGT]?B$/);
      // No secret reaches the page: the password fields are empty whatever is saved.
      expect(await page.getByLabel('Password', { exact: true }).inputValue()).to.equal('');
      // The indices of the live version, with their documents.
      const table = page.getByRole('table', { name: 'Indices of every version' });
      await table.waitFor();
      const name = `${prefix}projects_v1`;
      await table.getByRole('rowheader', { name: new RegExp(`^${name}`) }).waitFor();

      // Delete refused without the typed confirmation: the API's refusal shown, the index kept.
      await table.getByRole('button', { name: `Delete ${name}` }).click();
      expect(await page.evaluate(() => (globalThis as any).document.activeElement?.id)).to.equal('delete-confirm');
      await page.getByLabel('Index name').fill('not the name');
      await page.getByRole('button', { name: `Delete ${name}`, exact: true }).last().click();
      await page.getByRole('alert').getByText('code: confirmation-required').waitFor();
      const listed = (await admin.get('/api/admin/search/indices')).body.indices.map((i: { name: string }) => i.name);
      expect(listed).to.include(name);
      await page.getByRole('button', { name: 'Keep it' }).click();

      // A partial reindex of the projects type, followed to 100.
      await page.getByLabel('projects', { exact: true }).check();
      await page.getByLabel('Batch size (1–10,000)').fill('1');
      await page.getByRole('button', { name: 'Request the reindex' }).click();
      let job: { jobId: number } | undefined;
      await waitUntil(async () => (job = (await admin.get('/api/admin/search/reindex?take=1')).body.data[0]) !== undefined, 'the reindex job', 30_000);
      if (!job) throw new Error('no reindex job');
      await page.locator(`#reindex-${job.jobId}-phase[data-phase="completed"]`).waitFor({ timeout: 120_000 });
      expect(await page.getByRole('progressbar', { name: `Reindex job ${job.jobId}` }).getAttribute('value')).to.equal('100');
      const done = (await admin.get(`/api/admin/search/reindex/${job.jobId}`)).body.data;
      expect(done).to.deep.include({ phase: 'completed', mode: 'partial' });
      expect(done.progress.documents).to.equal(2);

      // The monitoring's chart is an image with its numbers said in words.
      await page.getByRole('img', { name: /Documents indexed per second/ }).waitFor();
      const violations = await axeViolations(page);
      expect(serious(violations), JSON.stringify(violations)).to.deep.equal([]);
      await page.screenshot({ path: path.join(SHOTS, `search-${engine}.png`), fullPage: true });
      expect(problems).to.deep.equal([]);
      await close();
    });

    it('a non-admin sees "administrators only" and the API refuses them', async () => {
      const { page, problems, close } = await signedIn(USER);
      await page.getByRole('heading', { name: 'Administrators only' }).waitFor();
      expect(await page.getByRole('table').count()).to.equal(0);
      expect(problems).to.deep.equal([]);
      expect(await page.evaluate(async () => (await fetch('/api/admin/search/indices')).status)).to.equal(403);
      await close();
    });
  });
}
