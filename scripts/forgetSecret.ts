/**
 * `npm run forget-secret -- <secret id> [<secret id> ...]`: forgets secrets for good by deleting
 * their keys (docs/compliance.md, "Secrets"): every sealed copy of each (in events, read models,
 * backups of the log) stays unreadable. A secret's id is what answers show of it
 * (`"apiToken": { "$secret": "<id>" }`). Exit 0: each was forgotten; 1: one had no key (unknown,
 * or forgotten already); 2: bad arguments or no database. Uses the server's configuration
 * (DATABASE_URL, or the embedded default's DATA_DIR: stop the server first).
 */
import { createLogger } from '../infra/logger';
import { loadConfig } from '../services/process/config';
import { openPlatform, secretVaultOf } from '../services/process/platform';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function main(): Promise<number> {
  const ids = process.argv.slice(2);
  if (ids.length === 0 || ids.some((id) => !UUID.test(id))) {
    console.error('usage: npm run forget-secret -- <secret id> [<secret id> ...]   (ids as answers show them: { "$secret": "<id>" })');
    return 2;
  }
  const config = loadConfig(process.env);
  const platform = await openPlatform(config, createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel));
  try {
    const vault = secretVaultOf(config, platform);
    let code = 0;
    for (const id of ids) {
      if (await vault.forget(id)) console.log(`forgot secret ${id}: its key is deleted, its sealed copies no longer open`);
      else {
        console.log(`no key for secret ${id}: unknown, or forgotten already`);
        code = 1;
      }
    }
    return code;
  } finally {
    await platform.close();
  }
}

main().then((code) => process.exit(code), (error: Error) => {
  console.error(`forget-secret: ${error.message}`);
  process.exit(2);
});
