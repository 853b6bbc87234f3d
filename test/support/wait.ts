// Waiting in tests for something that happens in the background.

/** Polls `check` until it answers true; fails after `timeoutMs` saying what it waited for (and the last state). */
export async function waitUntil(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 60_000, describe?: () => Promise<string> | string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) {
      const state = describe ? `; last state: ${await describe()}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${state}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** 'stopped' once `stopping` resolves, or `late` if it has not after `timeoutMs` (a stop that hangs fails its test with that message). */
export async function stopOutcome(stopping: Promise<unknown>, late: string, timeoutMs = 20_000): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([stopping.then(() => 'stopped'), new Promise<string>((r) => (timer = setTimeout(() => r(late), timeoutMs)))]);
  clearTimeout(timer);
  return outcome;
}
