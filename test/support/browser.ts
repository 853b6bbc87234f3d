import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Debian's Chromium (apt-get install chromium), or CHROMIUM_PATH. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Where page tests write their screenshots for review: $TEST_OUTPUT_DIR/pages, else .test-output/pages in the repository. */
export const SCREENSHOTS = path.join(process.env.TEST_OUTPUT_DIR ?? path.join(__dirname, '..', '..', '.test-output'), 'pages');

/**
 * In a `before`: headless Chromium, or the suite skipped with a line saying so when there is no
 * browser (failing instead with REQUIRE_SERVICES=1).
 */
export async function launchChromium(ctx: Mocha.Context, suite: string): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM)) {
    if (process.env.REQUIRE_SERVICES === '1') throw new Error(`REQUIRE_SERVICES=1 but no Chromium at ${CHROMIUM} (apt-get install chromium)`);
    console.log(`  SKIPPED ${suite}: no browser at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`);
    ctx.skip();
  }
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
}

const AXE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core run in the page (through the debugging protocol: the page's CSP does not apply); the violations, each with a few of its nodes. */
export async function axeViolations(page: Page): Promise<Array<{ id: string; impact: string; nodes: string[] }>> {
  await page.evaluate(AXE);
  return page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(o: unknown): Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }> }> } }).axe;
    const result = await axe.run({ resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
  });
}

/** The violations that fail a page: serious and critical. */
export const serious = (violations: Array<{ impact: string }>) => violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
