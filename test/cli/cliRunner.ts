import { spawn } from 'node:child_process';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');

export interface CliRun { code: number | null; stdout: string; stderr: string }

/**
 * Runs the CLI as a process with only the environment given (plus PATH): its source through
 * tsx by default, or a built binary (`command`), as a CI job would call it.
 */
export function runCli(args: string[], env: NodeJS.ProcessEnv, command?: string): Promise<CliRun> {
  const [file, argv] = command
    ? [command, args]
    : [process.execPath, ['--require', 'tsx/cjs', path.join(ROOT, 'services', 'cli', 'main.ts'), ...args]];
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, { cwd: ROOT, env: command ? env : { PATH: process.env.PATH, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
