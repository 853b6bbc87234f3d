import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { seedDefaults } from '../../services/entities/seed';
import { registerUser } from '../../services/identity/identity.handlers';
import { systemMetadata } from '../../services/shared/context';
import { CONTENT_SECURITY_POLICY } from '../../services/web/web.routes';
import { startTestApp, type TestApp } from '../support/app';
import { axeViolations, launchChromium, SCREENSHOTS as SHOTS, serious } from '../support/browser';
import { waitForPhase } from '../support/externalImport';
import { HttpClient } from '../support/server';

const PASSWORD = 'pages-password-1';
const HOSTILE = '<img src=x onerror=alert(1)>';

/** The export of the wizard test: the migration's fixture with a status that does not exist here and a project with a hostile name. */
function wizardExport(): string {
  const data = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'services', 'migration', 'fixtures', 'export-complete.json'), 'utf8'));
  data.statuses.data.push({ id: 7, name: 'Blocked upstream', system_name: 'blocked_upstream', color: '999999', is_passed: 0, is_failed: 0, is_final: 0, is_untested: 0 });
  data.projects.data[0].name = HOSTILE;
  return JSON.stringify(data);
}

/**
 * The administrator's pages in a real headless Chromium: sign-in, the start page, the migration wizard end to end.
 * Slow: launches Chromium for 12 fresh browser contexts (10 sign-ins), runs axe-core on 7 pages with full-page screenshots, and drives a migration import and its rollback through the worker
 */
describe('administrator pages in headless Chromium', function () {
  this.timeout(240_000);
  let app: TestApp;
  let browser: Browser;
  let admin: HttpClient;
  let bobId: number;

  before(async function () {
    browser = await launchChromium(this, 'the administrator pages in Chromium');
    app = await startTestApp({ worker: { chunkSize: 50 } });
    const meta = systemMetadata('test');
    await seedDefaults(app.deps, meta);
    await registerUser(app.deps, { email: 'admin@example.com', name: 'Ada Admin', password: PASSWORD, access: 'ADMIN' }, meta);
    await registerUser(app.deps, { email: 'user@example.com', name: 'Uma User', password: PASSWORD, access: 'USER' }, meta);
    bobId = await registerUser(app.deps, { email: 'bob@example.com', name: 'Bob Builder', password: PASSWORD, access: 'USER' }, meta);
    admin = new HttpClient(app.url);
    expect((await admin.post('/api/auth/login', { email: 'admin@example.com', password: PASSWORD })).status).to.equal(200);
    console.log(`      screenshots in ${SHOTS}`);
  });
  after(async () => {
    await browser?.close();
    await app?.stop();
  });

  /** A fresh browser profile whose pages may only talk to our server; anything else, a failed script or a dialog is recorded. */
  async function session(): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(app.url)) problems.push(`foreign request ${r.url()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && !/status of 401/.test(m.text())) problems.push(`console ${m.text()}`);
    });
    page.on('dialog', (d) => {
      problems.push(`dialog ${d.type()}: ${d.message()}`);
      void d.dismiss();
    });
    return { context, page, problems };
  }

  async function signIn(page: Page, email: string, next = ''): Promise<void> {
    await page.goto(`${app.url}/login${next}`);
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((u) => !u.pathname.startsWith('/login'));
  }

  /** axe-core in the page: no serious or critical violation. */
  async function accessible(page: Page, name: string): Promise<void> {
    const violations = await axeViolations(page);
    expect(serious(violations), `${name}: ${JSON.stringify(violations)}`).to.deep.equal([]);
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  }

  it('serves the pages with a Content-Security-Policy that allows no inline script, and the start page says what this is', async () => {
    const res = await fetch(`${app.url}/`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-security-policy')).to.equal(CONTENT_SECURITY_POLICY);
    expect(CONTENT_SECURITY_POLICY).to.include("script-src 'self'").and.not.include('unsafe-inline');
    const html = await res.text();
    expect(html).not.to.match(/<script>|<script [^>]*>[^<]/);
    const { context, page, problems } = await session();
    await page.goto(`${app.url}/`);
    await page.getByRole('heading', { name: 'Testament', level: 1 }).waitFor();
    expect(await page.getByText(/Version \d+\.\d+\.\d+/).count()).to.equal(1);
    for (const link of ['Sign in', 'Imports from another tool', 'API documentation']) expect(await page.getByRole('link', { name: link }).count(), link).to.be.greaterThan(0);
    await accessible(page, 'start');
    expect(problems).to.deep.equal([]);
    await context.close();
  });

  it('is usable with the keyboard: the skip link first, the notifications opened and closed with Enter and Escape', async () => {
    const { context, page, problems } = await session();
    await signIn(page, 'admin@example.com');
    await page.getByRole('heading', { name: 'Testament', level: 1 }).waitFor();
    const focused = () => page.evaluate(() => {
      const el = (globalThis as any).document.activeElement;
      return { text: el?.textContent?.trim(), outline: el ? (globalThis as any).getComputedStyle(el).outlineStyle : null };
    });
    await page.keyboard.press('Tab');
    expect(await focused()).to.deep.equal({ text: 'Skip to content', outline: 'solid' });
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => (globalThis as any).document.activeElement?.id)).to.equal('main');
    await page.getByRole('button', { name: /^Notifications/ }).focus();
    await page.keyboard.press('Enter');
    await page.getByText('No notifications.').waitFor();
    expect(await page.getByRole('button', { name: /^Notifications/ }).getAttribute('aria-expanded')).to.equal('true');
    await page.keyboard.press('Escape');
    expect(await page.getByText('No notifications.').isVisible()).to.equal(false);
    expect((await focused()).text).to.match(/^Notifications/);
    expect(problems).to.deep.equal([]);
    await context.close();
  });

  it('sign-in with a wrong password says so, keeps the e-mail and focuses the password', async () => {
    const { context, page, problems } = await session();
    await page.goto(`${app.url}/login`);
    await page.getByLabel('E-mail').fill('admin@example.com');
    await page.getByLabel('Password').fill('not the password');
    await page.keyboard.press('Enter');
    await page.getByRole('alert').getByText('The e-mail or the password is wrong.').waitFor();
    expect(await page.getByLabel('E-mail').inputValue()).to.equal('admin@example.com');
    expect(await page.evaluate(() => (globalThis as any).document.activeElement?.id)).to.equal('password');
    expect(page.url()).to.match(/\/login$/);
    await accessible(page, 'login-refused');
    expect(problems.filter((p) => !p.includes('401'))).to.deep.equal([]);
    await context.close();
  });

  it('a visitor not signed in is sent to sign in first, then back; a non-admin sees "administrators only"', async () => {
    const { context, page, problems } = await session();
    await page.goto(`${app.url}/admin/imports`);
    await page.waitForURL(/\/login\?next=%2Fadmin%2Fimports$/);
    await signIn(page, 'user@example.com', '?next=%2Fadmin%2Fimports');
    expect(new URL(page.url()).pathname).to.equal('/admin/imports');
    await page.getByRole('heading', { name: 'Administrators only' }).waitFor();
    expect(await page.getByRole('link', { name: 'Imports', exact: true }).count(), 'no admin navigation').to.equal(0);
    await accessible(page, 'admin-only');
    expect(problems).to.deep.equal([]);
    // The API refuses them whatever a page shows (the browser logs the refusals it is asked for here).
    expect((await page.evaluate(async () => (await fetch('/api/admin/imports/external/jobs')).status))).to.equal(403);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/login$/);
    expect((await page.evaluate(async () => (await fetch('/api/auth/me')).status))).to.equal(401);
    await context.close();
  });

  it('after signing in, ?next= never leaves the site: a tab, CR or LF in it, a backslash, another origin lead to the start page', async () => {
    for (const next of ['/\t/evil.example', '/\r/evil.example', '/\n/evil.example', '/\\evil.example', '\t//evil.example', 'http://evil.example/', 'javascript:alert(1)']) {
      const { context, page, problems } = await session();
      // Anything outside our server is answered here, not looked up: a page that went there shows it.
      const left: string[] = [];
      await context.route((url) => !url.href.startsWith(app.url), (route) => {
        left.push(route.request().url());
        return route.fulfill({ status: 200, contentType: 'text/html', body: '<p>left the site</p>' });
      });
      await signIn(page, 'user@example.com', `?next=${encodeURIComponent(next)}`);
      expect(page.url(), JSON.stringify(next)).to.equal(`${app.url}/`);
      expect(left, JSON.stringify(next)).to.deep.equal([]);
      await page.getByRole('heading', { name: 'Testament', level: 1 }).waitFor();
      expect(problems.filter((p) => !p.startsWith('foreign request')), JSON.stringify(next)).to.deep.equal([]);
      await context.close();
    }
  });

  it('the wizard: upload, analysis, mappings (a user mapped, a status created, a tag skipped), execute, completed, rollback', async () => {
    const { context, page, problems } = await session();
    await signIn(page, 'admin@example.com', '?next=%2Fadmin%2Fimports');
    await page.getByRole('heading', { name: 'Imports from another tool' }).waitFor();
    await accessible(page, 'imports');

    // Step 1: upload (the file chooser is the labelled input).
    const file = path.join(SHOTS, 'wizard-export.json');
    fs.writeFileSync(file, wizardExport());
    await page.getByLabel('Export file').setInputFiles(file);
    await page.getByRole('button', { name: 'Upload and analyse' }).click();
    await page.waitForURL(/\/admin\/imports\/\d+$/);
    const jobId = Number(new URL(page.url()).pathname.split('/').pop());

    // Step 2: the analysis, the hostile project name shown as text.
    await page.getByRole('heading', { name: 'Step 2: analysis' }).waitFor({ timeout: 60_000 });
    await page.getByText('projects: sample rows').click();
    await page.getByText(HOSTILE, { exact: true }).first().waitFor();
    expect(await page.locator('main img').count(), 'no element made from a value').to.equal(0);

    // Step 3: the CI bot mapped to Bob's account, the new status created, the tag "regression" skipped.
    const row = (name: string) => page.locator('tr', { has: page.getByRole('rowheader', { name: new RegExp(`^${name.replace(/[.]/g, '\\.')}`) }) });
    await row('ci-bot@example.com').getByRole('combobox', { name: /^Action for/ }).selectOption('map');
    await row('ci-bot@example.com').getByRole('combobox', { name: /^Existing user for/ }).selectOption(String(bobId));
    expect(await row('Blocked upstream').getByRole('combobox', { name: /^Action for/ }).inputValue()).to.equal('create');
    await row('regression').getByRole('combobox', { name: /^Action for/ }).selectOption('skip');
    // A template field that becomes a result field is picked among the result fields.
    expect(await row('browser_version').getByRole('combobox', { name: /^Existing resultField for/ }).count()).to.equal(1);
    await accessible(page, 'wizard-analysed');
    await page.getByRole('button', { name: 'Save mappings' }).click();
    await page.locator('[data-phase="configured"]').waitFor();
    const saved = (await admin.get(`/api/admin/imports/external/jobs/${jobId}`)).body.data.mappings;
    expect(saved.users).to.deep.include({ sourceId: '12', action: 'map', targetId: bobId });
    expect(saved.tags).to.deep.include({ sourceId: '2', action: 'skip' });
    expect(saved.statuses.find((e: any) => e.sourceId === '7')).to.include({ action: 'create' });

    // Step 4: preview, then execute.
    await page.getByRole('button', { name: 'Preview' }).click();
    await page.getByRole('table', { name: 'What executing would do' }).waitFor();
    // Each skip with its reason, readable at 1,280 and at 400 px (no sideways scroll of the page).
    await page.getByText(/^tags: 1 row skipped \(/).waitFor();
    await accessible(page, 'wizard-preview');
    const review = page.locator('section', { has: page.getByRole('table', { name: 'What executing would do' }) });
    await review.screenshot({ path: path.join(SHOTS, 'wizard-review.png') });
    await page.setViewportSize({ width: 400, height: 900 });
    await page.screenshot({ path: path.join(SHOTS, 'wizard-preview-400.png'), fullPage: true });
    await review.screenshot({ path: path.join(SHOTS, 'wizard-review-400.png') });
    // What sticks out, named in the failure: the elements whose right edge passes the window's.
    const wide = await page.evaluate(() => [...(globalThis as any).document.querySelectorAll('body *')]
      .filter((e: any) => e.getBoundingClientRect().right > 401).slice(0, 8).map((e: any) => `${e.tagName.toLowerCase()}.${e.className} ${Math.round(e.getBoundingClientRect().right)}`));
    expect(await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth), `no sideways scroll at 400 px: ${wide.join(', ')}`).to.be.at.most(400);
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.getByRole('button', { name: 'Execute the import' }).click();

    // Step 5: progress, then the result.
    await page.locator('[data-phase="completed"]').waitFor({ timeout: 120_000 });
    await page.getByRole('heading', { name: 'Result' }).waitFor();
    expect(await page.getByRole('progressbar', { name: 'Whole import' }).getAttribute('value')).to.equal('100');
    await accessible(page, 'wizard-completed');

    // The notifications indicator says the import ended, and leads to its page (read once followed).
    await page.reload();
    const bell = page.getByRole('button', { name: 'Notifications 1 unread' });
    await bell.waitFor();
    await bell.click();
    await page.getByRole('link', { name: `External import ${jobId} completed` }).click();
    await page.locator('[data-phase="completed"]').waitFor();
    expect(new URL(page.url()).pathname).to.equal(`/admin/imports/${jobId}`);
    await page.getByRole('button', { name: 'Notifications', exact: true }).waitFor();

    // What the import made, through the model API.
    const projects = (await admin.post('/api/model/project/findMany', { where: { name: HOSTILE } })).body.data;
    expect(projects).to.have.length(1);
    const statuses = (await admin.post('/api/model/status/findMany', { where: { systemName: 'blocked_upstream' } })).body.data;
    expect(statuses).to.have.length(1);
    expect((await admin.post('/api/model/tag/findMany', { where: { name: 'regression' } })).body.data).to.have.length(0);
    expect((await admin.post('/api/model/tag/findMany', { where: { name: 'smoke' } })).body.data).to.have.length(1);

    // Rollback, confirmed in the browser's dialog.
    page.removeAllListeners('dialog');
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Roll back' }).click();
    await page.locator('[data-phase="rolledBack"]').waitFor({ timeout: 120_000 });
    await waitForPhase(admin, jobId, ['rolledBack']);
    expect((await admin.post('/api/model/project/findMany', { where: { name: HOSTILE, isDeleted: false } })).body.data).to.have.length(0);
    await page.screenshot({ path: path.join(SHOTS, 'wizard-rolled-back.png'), fullPage: true });

    // The job list to come back to.
    await page.getByRole('link', { name: 'All import jobs' }).click();
    await page.getByRole('link', { name: `Job ${jobId}` }).waitFor();
    expect(problems).to.deep.equal([]);
    await context.close();
  });
});
