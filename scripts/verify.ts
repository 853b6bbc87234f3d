/**
 * `npm run verify [-- --from <position>] [--to <position>]`: recomputes the hash chain of the event
 * log (docs/compliance.md) and reports the first break. Exit 0: intact; 1: a break (printed with
 * its position and what differs); 2: it could not verify. On the embedded default it opens the
 * same DATA_DIR as the server (stop the server first); with DATABASE_URL it reads that server.
 *
 * `npm run verify -- <bundle.zip>`: checks an evidence bundle offline, against itself alone
 * (services/evidence/verifyBundle.ts); no database is opened. Exit codes as above.
 */
import { loadConfig } from '../services/process/config';
import { createLogger } from '../infra/logger';
import { openPlatform } from '../services/process/platform';
import { parseIntegrityQuery, verifyIntegrity } from '../services/integrity/integrity';
import { describeBundleReport, verifyBundle } from '../services/evidence/verifyBundle';

function usage(message: string): never {
  console.error(`${message}\nusage: npm run verify [-- --from <position>] [--to <position>]\n       npm run verify -- <evidence bundle.zip>`);
  process.exit(2);
}

function parseArgs(args: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < args.length; i += 2) {
    const name = args[i].replace(/^--/, '');
    if (!['from', 'to'].includes(name) || !args[i].startsWith('--')) usage(`unknown argument ${args[i]}`);
    if (args[i + 1] === undefined) usage(`${args[i]} needs a position`);
    out[name] = args[i + 1];
  }
  return out;
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
  try {
    query = parseIntegrityQuery(parseArgs(process.argv.slice(2)));
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
