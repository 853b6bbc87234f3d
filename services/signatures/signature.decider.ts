import type { DataOf, RecordSigned, SignatureRevoked, SignedEntity } from '../../contracts/events';
import type { Decider } from '../shared/decider';
import { DomainError } from '../shared/errors';

/**
 * The signatures of one record, an aggregate on `signatures-<entity>-<id>`: signed (each with its
 * meaning and the hash of the content it applies to), and revoked by another signed act. Nothing
 * is ever removed.
 */

export type SignatureEvent = RecordSigned | SignatureRevoked;
export type SignatureCommand =
  | { type: 'Sign'; signature: DataOf<'RecordSigned'> }
  | { type: 'Revoke'; revocation: DataOf<'SignatureRevoked'> };
/** Each signature's signer and whether it is revoked. */
export interface SignatureState { signatures: ReadonlyMap<string, { signerId: number; revoked: boolean }> }

export const signatureStream = (entity: SignedEntity, id: number) => `signatures-${entity}-${id}`;

export const signatureDecider: Decider<SignatureCommand, SignatureEvent, SignatureState> = {
  initialState: { signatures: new Map() },
  evolve(state, event) {
    const signatures = new Map(state.signatures);
    if (event.type === 'RecordSigned') signatures.set(event.data.signatureId, { signerId: event.data.signerId, revoked: false });
    else signatures.set(event.data.signatureId, { ...signatures.get(event.data.signatureId)!, revoked: true });
    return { signatures };
  },
  decide(cmd, state) {
    if (cmd.type === 'Sign') {
      if (state.signatures.has(cmd.signature.signatureId)) throw new DomainError('signature-exists', `Signature ${cmd.signature.signatureId} exists already`, { signatureId: cmd.signature.signatureId });
      return [{ type: 'RecordSigned', data: cmd.signature }];
    }
    const { signatureId } = cmd.revocation;
    const existing = state.signatures.get(signatureId);
    if (!existing) throw new DomainError('signature-not-found', `The record has no signature ${signatureId}`, { signatureId });
    if (existing.revoked) throw new DomainError('signature-revoked', `Signature ${signatureId} is revoked already`, { signatureId });
    return [{ type: 'SignatureRevoked', data: cmd.revocation }];
  },
};
