import { expect } from 'chai';
import { DOCS_CONTENT_SECURITY_POLICY } from '../../../services/api/docsPage.routes';
import { CONTENT_SECURITY_POLICY } from '../../../services/web/web.routes';
import { startTestApp, type TestApp } from '../../support/app';

/**
 * The headers that keep a browser from misreading or framing what the server answers: every
 * answer says nosniff (JSON, errors, files, pages), and the interactive API documentation, which
 * runs with the session cookie, has the pages' Content-Security-Policy and cannot be framed.
 */
describe('security headers', function () {
  this.timeout(60_000);
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app?.stop());

  it('every answer says X-Content-Type-Options: nosniff: JSON, errors in the error shape, the OpenAPI documents, health', async () => {
    const answers = [
      await fetch(`${app.url}/api/docs`),
      await fetch(`${app.url}/api/docs?category=custom`),
      await fetch(`${app.url}/api/auth/me`),
      await fetch(`${app.url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"email":' }),
      await fetch(`${app.url}/no/such/page`),
      await fetch(`${app.url}/healthz`),
      await fetch(`${app.url}/docs/api/init.js`),
    ];
    for (const res of answers) {
      expect(res.headers.get('x-content-type-options'), `${res.url} (${res.status})`).to.equal('nosniff');
      await res.arrayBuffer();
    }
    expect(answers.map((r) => r.status)).to.deep.equal([200, 200, 401, 400, 404, 200, 200]);
  });

  it('/docs/api, its script and its assets: the pages\' Content-Security-Policy (no inline script, no framing; Swagger UI\'s logo style by its hash), X-Frame-Options DENY', async () => {
    for (const path of ['/docs/api', '/docs/api/init.js', '/docs/api/assets/swagger-ui-bundle.js', '/docs/api/assets/swagger-ui.css']) {
      const res = await fetch(`${app.url}${path}`);
      expect(res.status, path).to.equal(200);
      expect(res.headers.get('content-security-policy'), path).to.equal(DOCS_CONTENT_SECURITY_POLICY);
      expect(res.headers.get('x-frame-options'), path).to.equal('DENY');
      expect(res.headers.get('referrer-policy'), path).to.equal('same-origin');
      await res.arrayBuffer();
    }
    // The pages' policy, with one inline style allowed by its hash (Swagger UI's logo).
    expect(DOCS_CONTENT_SECURITY_POLICY.split('; ').filter((d) => !CONTENT_SECURITY_POLICY.split('; ').includes(d))).to.deep.equal([
      "style-src 'self' 'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='",
    ]);
    expect(DOCS_CONTENT_SECURITY_POLICY).to.include("frame-ancestors 'none'").and.include("script-src 'self';").and.include("default-src 'none'").and.not.include('unsafe');
    const html = await (await fetch(`${app.url}/docs/api`)).text();
    expect(html, 'no inline script').not.to.match(/<script>|<script [^>]*>[^<]/);
  });
});
