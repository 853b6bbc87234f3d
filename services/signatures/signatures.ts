import { randomUUID } from 'node:crypto';
import type { Request, Response } from 'express';
import { ENTITIES } from '../../contracts/entities';
import type { EventEnvelope } from '../../contracts/envelope';
import type { DataOf, Reauthentication, SignedEntity } from '../../contracts/events';
import { findActiveUser } from '../identity/authentication';
import { checkPassword, normaliseEmail, type PasswordLimiter } from '../identity/loginAttempts';
import type { Policy } from '../model/policy';
import { findRowById } from '../model/query';
import type { CommandDeps } from '../shared/commandBus';
import { metadataFor } from '../shared/context';
import { handleCommand } from '../shared/decider';
import { HttpError, badRequest, notFound } from '../shared/errors';
import { recordContent } from './content';
import { signatureDecider, signatureStream } from './signature.decider';

/**
 * Electronic signatures (docs/compliance.md): a test run, a milestone or a repository case signed
 * with a meaning by a re-authenticated user whose role may sign with it; the signature fixes the
 * hash of the record's content as of its position, so a later change shows it as applying to an
 * earlier version. Revoked by another signed act, never deleted. Read from the events alone.
 */

/** Meanings every deployment knows; an administrator defines more (the catalogue's signatureMeaning). */
export const BUILT_IN_MEANINGS = ['reviewed', 'approved', 'executed'] as const;
/** How recent a session's login must be to sign without the password. */
export const REAUTHENTICATION_WINDOW_MS = 5 * 60_000;

export interface SignatureView {
  id: string;
  entity: SignedEntity;
  entityId: number;
  projectId: number;
  meaning: string;
  signer: { userId: number; name: string; email: string };
  comment: string | null;
  signedAt: string;
  /** The signature event's position, and the content it applies to. */
  position: string;
  reauthentication: Reauthentication;
  content: { position: string; hash: string; events: number };
  /** `earlier-version`: the record changed after it was signed (the content now differs). */
  appliesTo: 'current' | 'earlier-version';
  revoked: null | { at: string; reason: string; by: { userId: number; name: string }; position: string; reauthentication: Reauthentication };
}

type Deps = Pick<CommandDeps, 'knex' | 'store' | 'clock'>;

/** The record, visible to the caller and not deleted, with its project; else 404. */
export async function signedRecord(deps: Deps, policy: Policy, entity: SignedEntity, id: number): Promise<{ projectId: number }> {
  const def = ENTITIES[entity];
  const row = await findRowById(deps.knex, def, id, { fields: ['id', 'projectId', ...(def.softDeleteField ? [def.softDeleteField] : [])], relations: {}, counts: {} }, policy.read);
  if (!row || (def.softDeleteField && row[def.softDeleteField] === true)) throw notFound(`${entity} ${id} does not exist`, { entity, id });
  return { projectId: row.projectId as number };
}

/**
 * Re-authentication: the signer's password, or a session signed in within the window. An API
 * token alone never signs. The password is checked as a login's is (checkPassword): under the
 * same limit per account and address, a wrong one recorded as a failed login.
 */
export async function reauthenticate(deps: Deps & { passwordLimiter: PasswordLimiter | null }, req: Request, res: Response, password: string | undefined): Promise<Reauthentication> {
  const auth = req.auth!;
  if (password !== undefined) {
    const user = await findActiveUser(deps.knex, { id: auth.user.id });
    const ok = await checkPassword(deps, req, res, {
      email: normaliseEmail(auth.user.email), passwordHash: user?.passwordHash ?? null, password,
      refused: async () => ({ userId: auth.user.id, reason: 'wrong-password' }),
    });
    if (!ok) throw new HttpError(401, 'reauthentication-failed', 'The password is wrong: nothing was signed');
    return 'password';
  }
  const loginAt = auth.via === 'session' ? req.session?.loginAt : undefined;
  if (loginAt !== undefined && deps.clock().getTime() - loginAt <= REAUTHENTICATION_WINDOW_MS) return 'session-login';
  const why = auth.via === 'session' ? `your sign-in is older than ${REAUTHENTICATION_WINDOW_MS / 60_000} minutes` : 'an API token alone cannot sign';
  throw new HttpError(401, 'reauthentication-required', `Signing needs your password (${why})`, { path: 'password', windowSeconds: REAUTHENTICATION_WINDOW_MS / 1000 });
}

/**
 * May the caller sign with this meaning in the project? Administrators and the project's admins
 * may with any meaning; others when their role in the project is one the meaning lists.
 */
export async function authorizeMeaning(deps: Deps, policy: Policy, projectId: number, meaning: string): Promise<void> {
  const defined = (await deps.knex('signature_meanings').where({ name: meaning, is_deleted: false }).first('id')) as { id: number } | undefined;
  if (!defined && !(BUILT_IN_MEANINGS as readonly string[]).includes(meaning)) {
    const known = (await deps.knex('signature_meanings').where({ is_deleted: false }).orderBy('name').pluck('name')) as string[];
    throw badRequest('unknown-meaning', `No signature meaning is called "${meaning}"`, { path: 'meaning', meaning, known: [...new Set([...BUILT_IN_MEANINGS, ...known])] });
  }
  if (policy.access.all) return;
  const grant = policy.access.projects.get(projectId);
  if (grant?.projectAdmin) return;
  const roles = defined ? ((await deps.knex('signature_meaning_roles').where({ signature_meaning_id: defined.id }).pluck('role_id')) as number[]) : [];
  if (!grant || !roles.some((r) => grant.roleIds.includes(r))) {
    throw new HttpError(403, 'forbidden', `Your role in project ${projectId} may not sign with the meaning "${meaning}"`, { meaning, projectId });
  }
}

/** Appends the signature; answers it as listed. */
export async function sign(
  deps: Deps, req: Request, target: { entity: SignedEntity; id: number; projectId: number }, input: { meaning: string; comment: string | null; reauthentication: Reauthentication },
): Promise<SignatureView> {
  const content = await recordContent(deps.knex, deps.store, target.entity, target.id);
  if (content.events.length === 0) throw new HttpError(409, 'nothing-to-sign', `${target.entity} ${target.id} has no events to sign`, { entity: target.entity, id: target.id });
  const user = req.auth!.user;
  const signature: DataOf<'RecordSigned'> = {
    signatureId: randomUUID(), entity: target.entity, entityId: target.id, projectId: target.projectId, meaning: input.meaning,
    signerId: user.id, signerName: user.name, signerEmail: user.email, comment: input.comment,
    contentPosition: content.position, contentHash: content.hash, contentEvents: content.events.length,
    reauthentication: input.reauthentication, signedAt: deps.clock().toISOString(),
  };
  const outcome = await handleCommand(deps.store, signatureStream(target.entity, target.id), signatureDecider, { type: 'Sign', signature }, metadataFor(req.auth!, req));
  return viewOf(signature, outcome.position!, content, null);
}

/** Revokes a signature: its signer, the project's admins or an administrator, re-authenticated, with a reason. */
export async function revoke(
  deps: Deps, req: Request, policy: Policy, target: { entity: SignedEntity; id: number; projectId: number }, input: { signatureId: string; reason: string; reauthentication: Reauthentication },
): Promise<void> {
  const user = req.auth!.user;
  const signed = (await readSignatures(deps, target.entity, target.id)).find((s) => s.signatureId === input.signatureId);
  if (!signed) throw notFound(`${target.entity} ${target.id} has no signature ${input.signatureId}`, { signatureId: input.signatureId });
  const mayRevoke = signed.signerId === user.id || policy.access.all || policy.access.projects.get(target.projectId)?.projectAdmin === true;
  if (!mayRevoke) throw new HttpError(403, 'forbidden', 'Only the signer, the project\'s admins or an administrator may revoke a signature', { signatureId: input.signatureId });
  const revocation: DataOf<'SignatureRevoked'> = {
    signatureId: input.signatureId, entity: target.entity, entityId: target.id, projectId: target.projectId, reason: input.reason,
    revokerId: user.id, revokerName: user.name, reauthentication: input.reauthentication, revokedAt: deps.clock().toISOString(),
  };
  await handleCommand(deps.store, signatureStream(target.entity, target.id), signatureDecider, { type: 'Revoke', revocation }, metadataFor(req.auth!, req));
}

type Signed = DataOf<'RecordSigned'> & { position: string; revocation: (DataOf<'SignatureRevoked'> & { position: string }) | null };

async function readSignatures(deps: Deps, entity: SignedEntity, id: number): Promise<Signed[]> {
  const events: EventEnvelope[] = await deps.store.readStream(signatureStream(entity, id));
  const signed = new Map<string, Signed>();
  for (const e of events) {
    if (e.type === 'RecordSigned') {
      const d = e.data as DataOf<'RecordSigned'>;
      signed.set(d.signatureId, { ...d, position: e.position, revocation: null });
    } else if (e.type === 'SignatureRevoked') {
      const d = e.data as DataOf<'SignatureRevoked'>;
      const s = signed.get(d.signatureId);
      if (s) s.revocation = { ...d, position: e.position };
    }
  }
  return [...signed.values()];
}

function viewOf(s: DataOf<'RecordSigned'>, position: string, now: { position: string; hash: string }, revocation: Signed['revocation']): SignatureView {
  return {
    id: s.signatureId, entity: s.entity, entityId: s.entityId, projectId: s.projectId, meaning: s.meaning,
    signer: { userId: s.signerId, name: s.signerName, email: s.signerEmail }, comment: s.comment, signedAt: s.signedAt, position,
    reauthentication: s.reauthentication, content: { position: s.contentPosition, hash: s.contentHash, events: s.contentEvents },
    appliesTo: now.hash === s.contentHash ? 'current' : 'earlier-version',
    revoked: revocation && {
      at: revocation.revokedAt, reason: revocation.reason, by: { userId: revocation.revokerId, name: revocation.revokerName },
      position: revocation.position, reauthentication: revocation.reauthentication,
    },
  };
}

/** The record's signatures, oldest first, and its content now. */
export async function listSignatures(deps: Deps, entity: SignedEntity, id: number): Promise<{ data: SignatureView[]; content: { position: string; hash: string; events: number } }> {
  const signed = await readSignatures(deps, entity, id);
  const now = await recordContent(deps.knex, deps.store, entity, id);
  return {
    data: signed.map((s) => viewOf(s, s.position, now, s.revocation)),
    content: { position: now.position, hash: now.hash, events: now.events.length },
  };
}
