import path from 'node:path';
import express, { Router } from 'express';
import { CONTENT_SECURITY_POLICY, securePage } from '../web/web.routes';
import { CATEGORIES } from './openapi';

/**
 * Where swagger-ui-dist's files are. Not `require('swagger-ui-dist')`: its index loads the whole
 * browser bundle into this process (some 40 MB of resident memory) only to hand back this path.
 */
const SWAGGER_UI_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Testament API</title>
  <link rel="icon" type="image/png" href="/docs/api/assets/favicon-32x32.png">
  <link rel="stylesheet" href="/docs/api/assets/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/api/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/api/assets/swagger-ui-standalone-preset.js"></script>
  <script src="/docs/api/init.js"></script>
</body>
</html>
`;

/**
 * The pages' policy, with one inline style more: the `<style>` of Swagger UI's logo (two fill
 * colours), allowed by its hash, so exactly that text and nothing else. A new swagger-ui-dist whose
 * logo differs shows a refused style on the console, which test/e2e/docsPage.e2e.spec.ts reports.
 */
const SWAGGER_LOGO_STYLE = "'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='";
export const DOCS_CONTENT_SECURITY_POLICY = CONTENT_SECURITY_POLICY.replace("style-src 'self'", `style-src 'self' ${SWAGGER_LOGO_STYLE}`);

/** Swagger UI with one entry per category in its top-bar switcher; requests carry the session cookie. */
function initScript(): string {
  const urls = Object.keys(CATEGORIES).map((name) => ({ name, url: `/api/docs?category=${name}` }));
  return `window.ui = SwaggerUIBundle({
  urls: ${JSON.stringify(urls)},
  'urls.primaryName': 'custom',
  dom_id: '#swagger-ui',
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: 'StandaloneLayout',
  persistAuthorization: true,
  requestInterceptor: (request) => { request.credentials = 'same-origin'; return request; },
});
`;
}

/**
 * GET /docs/api: the interactive documentation, served from our own server (the Swagger UI files
 * come from the swagger-ui-dist package; no external CDN). Public, like the descriptions. It calls
 * the API with the session cookie, so it has the pages' headers (services/web): their
 * Content-Security-Policy (no inline script, nothing from elsewhere, no framing; the logo's style
 * besides) on the page, its script and its assets.
 */
export function docsPageRoutes(): Router {
  const router = Router();
  const script = initScript();
  router.get('/docs/api', (_req, res) => {
    securePage(res, DOCS_CONTENT_SECURITY_POLICY);
    res.type('html').send(PAGE);
  });
  router.get('/docs/api/init.js', (_req, res) => {
    securePage(res, DOCS_CONTENT_SECURITY_POLICY);
    res.type('application/javascript').send(script);
  });
  router.use('/docs/api/assets', express.static(SWAGGER_UI_DIR, { index: false, setHeaders: (res) => securePage(res, DOCS_CONTENT_SECURITY_POLICY) }));
  return router;
}
