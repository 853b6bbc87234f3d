import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { startTestApp, type TestApp } from '../support/app';
import { launchChromium } from '../support/browser';

/** /docs/api in a real headless Chromium: the page loads from our server alone and switches categories. */
describe('interactive API documentation (/docs/api) in headless Chromium', function () {
  this.timeout(120_000);
  let app: TestApp;
  let browser: Browser;

  before(async function () {
    browser = await launchChromium(this, '/docs/api in Chromium');
    app = await startTestApp();
  });
  after(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('renders the custom category, then switches to projects, under the pages\' Content-Security-Policy; every request stays on our server', async () => {
    const page = await browser.newPage();
    const foreign: string[] = [];
    const failed: string[] = [];
    const refused: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(app.url)) foreign.push(r.url());
    });
    page.on('response', (r) => {
      if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
    });
    // What the policy blocks the browser reports on the console.
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) refused.push(m.text());
    });
    page.on('pageerror', (e) => refused.push(`page error ${e.message}`));
    await page.goto(`${app.url}/docs/api`);
    await page.getByText('/api/auth/login').first().waitFor({ timeout: 30_000 });
    expect(await page.getByText('Testament API: custom').count()).to.be.greaterThan(0);

    await page.locator('.topbar select').selectOption({ label: 'projects' });
    await page.getByText('/api/model/project/findMany').first().waitFor({ timeout: 30_000 });
    expect(await page.getByText('/api/model/repositoryFolder/create').count()).to.be.greaterThan(0);
    await page.screenshot({ path: path.join(os.tmpdir(), 'testament-docs-api.png') });

    expect(foreign).to.deep.equal([]);
    expect(failed).to.deep.equal([]);
    expect(refused).to.deep.equal([]);
    await page.close();
  });

  it('cannot be framed by another site (frame-ancestors \'none\', X-Frame-Options DENY)', async () => {
    // Another origin on this machine (a page from a public address may not frame a loopback one at all, framed or not).
    const framer = http.createServer((_req, res) => res.setHeader('content-type', 'text/html').end(`<iframe id="docs" src="${app.url}/docs/api"></iframe>`));
    await new Promise<void>((resolve) => framer.listen(0, '127.0.0.1', resolve));
    const page = await browser.newPage();
    try {
      await page.goto(`http://127.0.0.1:${(framer.address() as AddressInfo).port}/`);
      const docs = page.frames().find((f) => f !== page.mainFrame())!;
      await docs.waitForLoadState();
      // Chromium shows its error page in the frame instead.
      expect(docs.url()).not.to.equal(`${app.url}/docs/api`);
      expect(await docs.locator('#swagger-ui').count()).to.equal(0);
    } finally {
      await page.close();
      await new Promise((resolve) => framer.close(resolve));
    }
  });

  it('answers a missing asset with a 404 in the error shape', async () => {
    const res = await fetch(`${app.url}/docs/api/assets/nothing-here.js`);
    expect(res.status).to.equal(404);
    expect(((await res.json()) as { code: string }).code).to.equal('route-not-found');
  });
});
