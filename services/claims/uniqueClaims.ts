import { claimOwnerStream } from '../../contracts/claims';
import type { EventEnvelope, EventMetadata } from '../../contracts/envelope';
import type { UniqueValueClaimed, UniqueValueReleased } from '../../contracts/events';
import { ConcurrencyError } from '../shared/errors';
import type { EventStore, ExpectedRevision } from '../shared/eventStore';

/**
 * A unique value and the row it is for are written to two streams: the claim first (so that two
 * writers cannot both take the value), then the row. The two are made one unit here: everything
 * is checked before the claim, a claim whose row's write fails is released at once, and the claim
 * reconciler (claimReconciler.ts) releases claims whose row never appeared at all (a process
 * stopped between the two appends). docs/architecture.md, "Unique values".
 */

export interface Claim { streamId: string; scope: string; value: string; ownerId: number }
/** A claim as appended: the revision it sits at on its stream. */
export interface HeldClaim extends Claim { revision: bigint }

export async function lastEventOf(store: EventStore, streamId: string): Promise<EventEnvelope | undefined> {
  return (await store.readStream(streamId, { direction: 'backwards', maxCount: 1 }))[0];
}

/** The claim a claim stream's last event holds; null when there is none or the last one was released. */
export function activeClaim(last: EventEnvelope | undefined): (UniqueValueClaimed['data'] & { revision: bigint }) | null {
  if (!last || last.type !== 'UniqueValueClaimed') return null;
  return { ...(last.data as UniqueValueClaimed['data']), revision: BigInt(last.revision) };
}

/** The revision a new claim is appended at: right after the stream's last event, or on a new stream. */
export const claimRevisionAfter = (last: EventEnvelope | undefined): ExpectedRevision => (last ? BigInt(last.revision) : 'no-stream');

/** Whether the row that owns the claim has been written (its stream exists). A scope without an owner stream counts as written. */
export async function ownerAppeared(store: EventStore, claim: Pick<Claim, 'scope' | 'ownerId'>): Promise<boolean> {
  const stream = claimOwnerStream(claim.scope, claim.ownerId);
  return stream === null || (await store.readStream(stream, { maxCount: 1 })).length > 0;
}

export type ReleaseOutcome = 'released' | 'owner-appeared' | 'claim-moved-on';

/**
 * Releases a claim whose owner was not written. Nothing happens when the owner did appear after
 * all (a write that failed late may still have gone in), or when the claim stream moved on (the
 * release is appended at the claim's revision). Should the owner appear between the check and the
 * release, the value is claimed for it again: a released value is never held by a written row.
 */
export async function releaseClaim(store: EventStore, claim: HeldClaim, reason: UniqueValueReleased['data']['reason'], metadata: EventMetadata): Promise<ReleaseOutcome> {
  if (await ownerAppeared(store, claim)) return 'owner-appeared';
  const released: UniqueValueReleased = { type: 'UniqueValueReleased', data: { scope: claim.scope, value: claim.value, ownerId: claim.ownerId, reason } };
  let revision: bigint;
  try {
    revision = (await store.append(claim.streamId, [released], { expectedRevision: claim.revision, metadata })).nextRevision;
  } catch (error) {
    if (error instanceof ConcurrencyError) return 'claim-moved-on';
    throw error;
  }
  if (!(await ownerAppeared(store, claim))) return 'released';
  try {
    await appendClaim(store, claim, revision, metadata);
  } catch (error) {
    // Another writer claimed the value in between: two rows hold it now, as without this step.
    if (!(error instanceof ConcurrencyError)) throw error;
  }
  return 'owner-appeared';
}

/**
 * Gives back a value whose owner a rollback deleted (`owner-rolled-back`), also a value claimed
 * for good (a user's e-mail): the release is appended at the revision of the stream's last claim
 * when that claim is still this owner's. Nothing happens (false) when the stream holds no claim of
 * this owner (released already, never claimed, or claimed by another row since): repeated after
 * a crash, it releases once.
 */
export async function releaseDeletedOwnerClaim(store: EventStore, claim: Claim, metadata: EventMetadata): Promise<boolean> {
  const held = activeClaim(await lastEventOf(store, claim.streamId));
  if (!held || held.ownerId !== claim.ownerId || held.scope !== claim.scope) return false;
  const released: UniqueValueReleased = { type: 'UniqueValueReleased', data: { scope: held.scope, value: held.value, ownerId: held.ownerId, reason: 'owner-rolled-back' } };
  try {
    await store.append(claim.streamId, [released], { expectedRevision: held.revision, metadata });
  } catch (error) {
    if (error instanceof ConcurrencyError) return false;
    throw error;
  }
  return true;
}

export async function appendClaim(store: EventStore, claim: Claim, expectedRevision: ExpectedRevision, metadata: EventMetadata): Promise<HeldClaim> {
  const event: UniqueValueClaimed = { type: 'UniqueValueClaimed', data: { scope: claim.scope, value: claim.value, ownerId: claim.ownerId } };
  const { nextRevision } = await store.append(claim.streamId, [event], { expectedRevision, metadata });
  return { ...claim, revision: nextRevision };
}

/**
 * Claims each value at the revision its writer read, then writes the owner. When a claim is lost
 * to a concurrent writer (`taken` says what to answer), or the owner's write fails, the claims
 * already appended are released and the error is thrown on. A release that fails itself (the
 * store away) leaves its claim to the reconciler.
 */
export async function writeWithClaims<T>(
  store: EventStore,
  claims: readonly { claim: Claim; expectedRevision: ExpectedRevision }[],
  write: () => Promise<T>,
  taken: (claim: Claim) => Error,
  metadata: EventMetadata,
): Promise<T> {
  const held: HeldClaim[] = [];
  try {
    for (const { claim, expectedRevision } of claims) {
      try {
        held.push(await appendClaim(store, claim, expectedRevision, metadata));
      } catch (error) {
        if (error instanceof ConcurrencyError) throw taken(claim);
        throw error;
      }
    }
    return await write();
  } catch (error) {
    for (const claim of held) await releaseClaim(store, claim, 'owner-write-failed', metadata).catch(() => undefined);
    throw error;
  }
}
