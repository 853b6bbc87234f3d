/**
 * `npm run verify [-- --from <position>] [--to <position>]`: recomputes the hash chain of the event
 * log (docs/compliance.md) and reports the first break. Exit 0: intact; 1: a break (printed with
 * its position and what differs); 2: it could not verify. On the embedded default it opens the
 * same DATA_DIR as the server (stop the server first); with DATABASE_URL it reads that server.
 *
 * `npm run verify -- --anchors <file>`: the anchor copies in the file (one JSON line each, as
 * INTEGRITY_ANCHOR_FILE gets them) against the hashes the log holds now, as well.
 *
 * `npm run verify -- <bundle.zip>`: checks an evidence bundle offline, against itself alone
 * (services/shared/evidenceBundle.ts); no database is opened. Exit codes as above.
 */
import { loadConfig } from '../services/process/config';
import { createLogger } from '../infra/logger';
import { openPlatform } from '../services/process/platform';
import { parseIntegrityQuery, verifyIntegrity } from '../services/integrity/integrity';
import { describeBundleReport, verifyBundle } from '../services/shared/evidenceBundle';
import { type AnchorRecord, checkAnchors } from '../services/integrity/anchors';
import fs from 'node:fs';

function usage(message: string): never {
  console.error(`${message}\nusage: npm run verify [-- --from <position>] [--to <position>] [--anchors <file>]\n       npm run verify -- <evidence bundle.zip>`);
  process.exit(2);
}

function parseArgs(args: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < args.length; i += 2) {
    const name = args[i].replace(/^--/, '');
    if (!['from', 'to', 'anchors'].includes(name) || !args[i].startsWith('--')) usage(`unknown argument ${args[i]}`);
    if (args[i + 1] === undefined) usage(`${args[i]} needs ${name === 'anchors' ? 'a file' : 'a position'}`);
    out[name] = args[i + 1];
  }
  return out;
}

/** The anchor copies of a file: one JSON object `{position, hash, anchoredAt}` per line. */
function readAnchorFile(file: string): AnchorRecord[] {
  const lines = fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '');
  return lines.map((line, i) => {
    let a: Partial<AnchorRecord> | null = null;
    try {
      a = JSON.parse(line) as Partial<AnchorRecord>;
    } catch { /* reported below */ }
    if (!a || typeof a.position !== 'string' || !/^[1-9][0-9]*$/.test(a.position) || typeof a.hash !== 'string' || !/^[0-9a-f]{64}$/.test(a.hash)) {
      throw new Error(`${file}, line ${i + 1}: not an anchor ({"position": "<n>", "hash": "<64 hex>", "anchoredAt": "<time>"})`);
    }
    return { position: a.position, hash: a.hash, anchoredAt: String(a.anchoredAt ?? '') };
  });
}

async function verifyBundleFile(file: string): Promise<number> {
  const report = await verifyBundle(file);
  for (const line of describeBundleReport(file, report)) console.log(line);
  return report.ok ? 0 : 1;
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.length > 0 && !args[0].startsWith('--')) {
    if (args.length > 1) usage(`one bundle at a time (given: ${args.join(' ')})`);
    return verifyBundleFile(args[0]);
  }
  let query;
  let anchorFile: string | undefined;
  let anchorCopies: AnchorRecord[] = [];
  try {
    const { anchors, ...range } = parseArgs(args);
    query = parseIntegrityQuery(range);
    anchorFile = anchors;
    if (anchors !== undefined) anchorCopies = readAnchorFile(anchors);
  } catch (error) {
    usage((error as Error).message);
  }
  const config = loadConfig(process.env);
  const platform = await openPlatform(config, createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel));
  try {
    const report = await verifyIntegrity(platform.store, query);
    const rate = Math.round(report.checked / Math.max(report.seconds, 1e-9));
    console.log(`checked ${report.checked.toLocaleString('en')} events, positions ${report.from}..${report.to}, in ${report.seconds.toFixed(2)} s (${rate.toLocaleString('en')} events/s)`);
    console.log(`head: position ${report.head.position}, hash ${report.head.hash ?? 'none'}`);
    console.log(`anchors in the log: ${report.anchors.checked} checked`);
    if (report.intact && anchorFile !== undefined) {
      const copies = await checkAnchors(platform.store, anchorCopies);
      console.log(`anchors in ${anchorFile}: ${copies.checked} checked`);
      const m = copies.firstMismatch;
      if (m) {
        console.log(`BROKEN: the anchor of ${m.anchoredAt} in ${anchorFile} recorded ${m.hash} at position ${m.position}; the log holds ${m.recordedHash ?? 'no event'} there (the chain was rewritten after it)`);
        return 1;
      }
    }
    if (report.intact) {
      console.log('intact: every event gives the hash recorded when it was appended, and each is chained to the one before');
      return 0;
    }
    const b = report.firstBreak!;
    console.log(`BROKEN at position ${b.position} (${b.problem}): ${b.detail}`);
    console.log(`  recorded hash: ${b.recordedHash ?? 'none'}\n  computed hash: ${b.computedHash ?? 'none'}`);
    return 1;
  } finally {
    await platform.close();
  }
}

main().then((code) => process.exit(code), (error: Error & { status?: number }) => {
  console.error(`verify: ${error.message}`);
  process.exit(2);
});
