import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Where the CLI keeps its URL and token: the user's configuration directory
 * (`$XDG_CONFIG_HOME` or `~/.config` on Linux, `~/Library/Application Support` on macOS,
 * `%APPDATA%` on Windows), `testament/config.json`, readable by the user only (0600).
 * `SERVICE_URL` and `SERVICE_TOKEN` in the environment take precedence.
 */

export interface Settings { url: string | null; token: string | null }

export function settingsFile(env: NodeJS.ProcessEnv = process.env, platform = process.platform): string {
  const home = env.HOME ?? env.USERPROFILE ?? os.homedir();
  const base = platform === 'win32' ? (env.APPDATA ?? path.join(home, 'AppData', 'Roaming'))
    : platform === 'darwin' ? path.join(home, 'Library', 'Application Support')
      : (env.XDG_CONFIG_HOME || path.join(home, '.config'));
  return path.join(base, 'testament', 'config.json');
}

export function readStored(file = settingsFile()): Settings {
  try {
    const stored = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<Settings>;
    return { url: typeof stored.url === 'string' ? stored.url : null, token: typeof stored.token === 'string' ? stored.token : null };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { url: null, token: null };
    throw new CliError(`Cannot read ${file}: ${(err as Error).message}`);
  }
}

/** Environment first, then the stored file. */
export function effectiveSettings(env: NodeJS.ProcessEnv = process.env, file = settingsFile(env)): Settings & { source: { url: string; token: string } } {
  const stored = readStored(file);
  return {
    url: env.SERVICE_URL || stored.url,
    token: env.SERVICE_TOKEN || stored.token,
    source: { url: env.SERVICE_URL ? 'SERVICE_URL' : file, token: env.SERVICE_TOKEN ? 'SERVICE_TOKEN' : file },
  };
}

export function writeStored(settings: Settings, file = settingsFile()): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o600 });
  fs.chmodSync(temporary, 0o600);
  fs.renameSync(temporary, file);
}

export function clearStored(file = settingsFile()): boolean {
  try {
    fs.unlinkSync(file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** A token shown with all but its first 8 and last 4 characters hidden. */
export function masked(token: string): string {
  return token.length <= 12 ? '*'.repeat(token.length) : `${token.slice(0, 8)}${'*'.repeat(token.length - 12)}${token.slice(-4)}`;
}

/** A failure the CLI reports as one line and exits non-zero with. */
export class CliError extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message);
    this.name = 'CliError';
  }
}

/** An http(s) URL without a trailing slash. */
export function normaliseUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new CliError(`Not a URL: ${text}`, 2);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CliError(`The URL must start with http:// or https://: ${text}`, 2);
  return url.toString().replace(/\/+$/, '');
}
