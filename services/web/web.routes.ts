import { Router, type Response } from 'express';
import { version as VERSION } from '../../package.json';
import { asyncHandler } from '../shared/http';
import { webAssets } from './bundle';

/**
 * The pages a person opens in a browser: the start page, sign-in and the administrator's pages.
 * Each is the same small HTML document; the script (client/, bundled) draws the page from the
 * address and calls the public API only, with the session cookie. Who may do what is the API's
 * business: a page adds nothing to security.
 */
export const PAGE_PATHS = ['/', '/login', '/admin', '/admin/imports', '/admin/imports/:jobId', '/admin/search'];

/** No inline script or style, nothing from another origin, no framing. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
  "font-src 'self'", "form-action 'self'", "frame-ancestors 'none'", "base-uri 'none'",
].join('; ');

const SHELL = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="testament-version" content="${VERSION}">
  <title>Testament</title>
  <link rel="icon" href="/web/icon.svg" type="image/svg+xml">
  <link rel="stylesheet" href="/web/style.css">
  <script src="/web/app.js" defer></script>
</head>
<body>
  <div id="app"><p class="loading">Loading…</p></div>
  <noscript><p>These pages need JavaScript. The API is described at <a href="/docs/api">/docs/api</a>.</p></noscript>
</body>
</html>
`;

/** The tab's icon: a check mark on the brand's blue. */
const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#0a58ca"/><path d="M8 17l5 5 11-12" fill="none" stroke="#fff" stroke-width="4" stroke-linecap="round" stroke-linejoin="round"/></svg>`;

/** The headers of every page and of what it loads (the API documentation's too: it runs with the session cookie). */
export function securePage(res: Response, policy = CONTENT_SECURITY_POLICY): void {
  res.setHeader('Content-Security-Policy', policy);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Referrer-Policy', 'same-origin');
}

export function webRoutes(): Router {
  const router = Router();
  // Bundled while the server starts, not on the first visitor's request.
  void webAssets().catch(() => undefined);
  /** Answers `body()` as `type`, with the security headers; revalidated each time unless `cache` says otherwise. */
  const serve = (paths: string | string[], type: string, body: () => Promise<string> | string, cache = 'no-cache') =>
    router.get(paths, asyncHandler(async (_req, res) => {
      const content = await body();
      securePage(res);
      res.setHeader('Cache-Control', cache);
      res.type(type).send(content);
    }));
  serve(PAGE_PATHS, 'html', () => SHELL);
  serve('/web/app.js', 'application/javascript', async () => (await webAssets()).script);
  serve('/web/style.css', 'text/css', async () => (await webAssets()).style);
  serve(['/web/icon.svg', '/favicon.ico'], 'image/svg+xml', () => ICON, 'public, max-age=86400');
  return router;
}
