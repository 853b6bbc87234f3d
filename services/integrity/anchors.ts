import fs from 'node:fs';
import type { Logger } from 'pino';
import type { DataOf } from '../../contracts/events';
import { systemMetadata } from '../shared/context';
import { ConcurrencyError } from '../shared/errors';
import type { EventStore } from '../shared/eventStore';

/**
 * Periodic anchors (docs/compliance.md): the log's head hash recorded as an IntegrityAnchored
 * event on `integrityAnchors`, and copied first to a file and/or a URL the organisation controls
 * (INTEGRITY_ANCHOR_FILE, INTEGRITY_ANCHOR_URL), so that a chain rewritten whole after a change no
 * longer matches the copies. Runs in the worker role; with several workers the stream's expected
 * revision lets one anchor per round. A copy that fails is logged and left out of the event's
 * `copies`; the next round anchors anew (nothing is retried forever).
 */

export const ANCHOR_STREAM = 'integrityAnchors';
/** How long a POST to the anchor URL may take. */
const URL_TIMEOUT_MS = 10_000;

export interface AnchorSettings {
  /** Between two anchors; 0: no periodic anchors. */
  intervalMs: number;
  /** A file a JSON line `{position, hash, anchoredAt}` is appended to (and synced), or null. */
  file: string | null;
  /** A URL the same JSON is POSTed to, with `Authorization: Bearer <token>` when a token is given, or null. */
  url: string | null;
  token: string | null;
}

export type AnchorOutcome =
  | { anchored: true; position: string; hash: string; copies: ('file' | 'url')[]; eventPosition: string }
  | { anchored: false; reason: 'unchanged' | 'empty' | 'raced' | 'no-chain' };

export interface AnchorDeps { store: EventStore; logger: Pick<Logger, 'info' | 'warn' | 'error'>; clock: () => Date; settings: AnchorSettings }

/** One anchor now: nothing when nothing was appended since the last one. */
export async function anchorNow(deps: AnchorDeps): Promise<AnchorOutcome> {
  if (!deps.store.chainHead) return { anchored: false, reason: 'no-chain' };
  // The last anchor before the head: the append below expects the anchor stream as read here, so
  // a worker that anchors meanwhile makes this one's append a race lost. (Read the other way
  // round, a worker could read the head, then another's anchor of that same head, and anchor it
  // again after it.)
  const [last] = await deps.store.readStream(ANCHOR_STREAM, { direction: 'backwards', maxCount: 1 });
  const head = await deps.store.chainHead();
  if (head.position === '0' || head.hash === null) return { anchored: false, reason: 'empty' };
  // Nothing past the last anchor (a head that lags behind its own anchor event included).
  if (last && (BigInt(head.position) <= BigInt(last.position) || (last.data as { position?: string }).position === head.position)) return { anchored: false, reason: 'unchanged' };
  const anchoredAt = deps.clock().toISOString();
  const line = { position: head.position, hash: head.hash, anchoredAt };
  const copies: ('file' | 'url')[] = [];
  if (deps.settings.file) {
    try {
      await appendSynced(deps.settings.file, `${JSON.stringify(line)}\n`);
      copies.push('file');
    } catch (err) {
      deps.logger.error({ err, file: deps.settings.file }, 'integrity anchor: cannot write the anchor file');
    }
  }
  if (deps.settings.url) {
    try {
      const res = await fetch(deps.settings.url, {
        method: 'POST', signal: AbortSignal.timeout(URL_TIMEOUT_MS), body: JSON.stringify(line),
        headers: { 'content-type': 'application/json', ...(deps.settings.token && { authorization: `Bearer ${deps.settings.token}` }) },
      });
      if (!res.ok) throw new Error(`answered ${res.status}`);
      copies.push('url');
    } catch (err) {
      deps.logger.error({ err, url: deps.settings.url }, 'integrity anchor: the anchor URL did not take it');
    }
  }
  const data: DataOf<'IntegrityAnchored'> = { ...line, copies };
  try {
    const { position } = await deps.store.append(ANCHOR_STREAM, [{ type: 'IntegrityAnchored', data }], {
      expectedRevision: last ? BigInt(last.revision) : 'no-stream', metadata: systemMetadata('integrity-anchor'),
    });
    return { anchored: true, position: head.position, hash: head.hash, copies, eventPosition: position };
  } catch (err) {
    if (err instanceof ConcurrencyError) return { anchored: false, reason: 'raced' };
    throw err;
  }
}

async function appendSynced(file: string, text: string): Promise<void> {
  const handle = await fs.promises.open(file, 'a', 0o640);
  try {
    await handle.appendFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** The periodic loop: one anchor per interval; a failed round is logged, the next one tries again. */
export function startAnchoring(deps: AnchorDeps): { stop(): Promise<void> } {
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  const round = () => {
    running = anchorNow(deps).then((outcome) => {
      if (outcome.anchored) deps.logger.info({ position: outcome.position, copies: outcome.copies }, 'integrity anchor recorded');
      if (!outcome.anchored && outcome.reason === 'no-chain') deps.logger.warn('integrity anchors: the event store keeps no hash chain; none is recorded');
    }, (err) => deps.logger.error({ err }, 'integrity anchor failed; the next round tries again')).finally(() => {
      if (!stopped) timer = setTimeout(round, deps.settings.intervalMs);
    });
  };
  timer = setTimeout(round, deps.settings.intervalMs);
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}

export interface AnchorRecord { position: string; hash: string; anchoredAt: string }
export interface AnchorCheck {
  checked: number;
  /** The first anchor whose hash is not the one recorded now with the event at its position (or whose position is gone). */
  firstMismatch: (AnchorRecord & { recordedHash: string | null }) | null;
}

/** Positions looked up per statement. */
const ANCHORS_PER_READ = 1000;

/** Anchors (the log's own, or copies kept elsewhere) against the hashes the log holds now. */
export async function checkAnchors(store: EventStore, anchors: readonly AnchorRecord[]): Promise<AnchorCheck> {
  if (!store.readChained) return { checked: 0, firstMismatch: null };
  let checked = 0;
  for (let i = 0; i < anchors.length; i += ANCHORS_PER_READ) {
    const page = anchors.slice(i, i + ANCHORS_PER_READ);
    const recorded = new Map((await store.readChained({ positions: page.map((a) => a.position) })).map((e) => [e.position, e.hash]));
    for (const anchor of page) {
      checked++;
      const hash = recorded.get(anchor.position) ?? null;
      if (hash !== anchor.hash) return { checked, firstMismatch: { ...anchor, recordedHash: hash } };
    }
  }
  return { checked, firstMismatch: null };
}

/** The log's own anchors with positions in the range. */
export async function loggedAnchors(store: EventStore, range: { from: string; to: string }): Promise<AnchorRecord[]> {
  const events = await store.readStream(ANCHOR_STREAM);
  return events.map((e) => e.data as DataOf<'IntegrityAnchored'>)
    .filter((a) => BigInt(a.position) >= BigInt(range.from) && BigInt(a.position) <= BigInt(range.to))
    .map(({ position, hash, anchoredAt }) => ({ position, hash, anchoredAt }));
}
