import type { ChainReport, EventStore } from '../shared/eventStore';
import { type AnchorCheck, checkAnchors, loggedAnchors } from './anchors';
import { HttpError } from '../shared/errors';
import { invalidArgument, queryParameters } from '../shared/validate';

/**
 * Tamper evidence (docs/compliance.md): the hash chain of the log recomputed over a range of
 * positions, its first break reported. Built from the events alone (never from a read model).
 */
export interface IntegrityQuery { from?: string; to?: string }

const POSITION = /^[1-9][0-9]{0,18}$/;

/** GET /api/admin/integrity's query string: `from` and `to`, positions (inclusive), from ≤ to. */
export function parseIntegrityQuery(query: Record<string, unknown>): IntegrityQuery {
  const given = queryParameters(query, ['from', 'to']);
  for (const name of ['from', 'to'] as const) {
    if (given[name] !== undefined && (!POSITION.test(given[name]) || BigInt(given[name]) > BigInt(Number.MAX_SAFE_INTEGER))) {
      throw invalidArgument(name, 'must be an event position: a positive integer');
    }
  }
  if (given.from !== undefined && given.to !== undefined && BigInt(given.from) > BigInt(given.to)) throw invalidArgument('from', 'must not be after to');
  return { ...(given.from !== undefined && { from: given.from }), ...(given.to !== undefined && { to: given.to }) };
}

/** The chain's report, and the log's anchors in the range checked against it. */
export type IntegrityReport = ChainReport & { anchors: AnchorCheck };

/**
 * Verifies the chain over the range, then the anchors recorded in it (services/integrity/anchors.ts):
 * an anchor whose hash is no longer the one at its position means the chain was recomputed after
 * a change. A range past the head is refused, an event store without a chain is a 501.
 */
export async function verifyIntegrity(store: EventStore, query: IntegrityQuery): Promise<IntegrityReport> {
  if (!store.verifyChain) {
    throw new HttpError(501, 'integrity-not-kept', `The ${store.kind} event store keeps no hash chain: tamper evidence needs the PostgreSQL or EventStoreDB adapter (docs/compliance.md)`, { store: store.kind });
  }
  const head = BigInt(await store.headPosition());
  for (const name of ['from', 'to'] as const) {
    const value = query[name];
    if (value !== undefined && BigInt(value) > head) throw invalidArgument(name, `is past the log's head (${head})`, { head: head.toString() });
  }
  const report = await store.verifyChain(query);
  if (!report.intact) return { ...report, anchors: { checked: 0, firstMismatch: null } };
  const anchors = await checkAnchors(store, await loggedAnchors(store, { from: report.from, to: report.to }));
  const m = anchors.firstMismatch;
  if (m === null) return { ...report, anchors };
  return {
    ...report, intact: false, anchors,
    firstBreak: {
      position: m.position, problem: 'anchor', recordedHash: m.recordedHash, computedHash: m.hash,
      detail: `the anchor of ${m.anchoredAt} recorded hash ${m.hash} at position ${m.position}; the log now holds ${m.recordedHash ?? 'no event'} there: the chain was recomputed after a change`,
    },
  };
}
