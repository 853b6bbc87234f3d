import { Router } from 'express';
import type { JSONSchemaType } from 'ajv';
import type { SignedEntity } from '../../contracts/events';
import type { PasswordLimiter } from '../identity/loginAttempts';
import { policyFor } from '../model/policy';
import { type CommandDeps, withPositionHeader } from '../shared/commandBus';
import { asyncHandler } from '../shared/http';
import { bodyParser, idSchema, invalidArgument, parseId, queryParameters } from '../shared/validate';
import { SIGNED_ENTITIES } from './content';
import { authorizeMeaning, listSignatures, reauthenticate, revoke, sign, signedRecord } from './signatures';

/**
 * POST /api/signatures (sign a record), GET /api/signatures?entity=&id= (its signatures, each
 * saying whether it applies to the record as it is now), POST /api/signatures/{id}/revoke.
 */

interface SignBody { entity: SignedEntity; id: number; meaning: string; comment?: string | null; password?: string }
interface RevokeBody { entity: SignedEntity; id: number; reason: string; password?: string }

const target = {
  entity: { type: 'string', enum: SIGNED_ENTITIES as SignedEntity[] },
  id: idSchema(),
  password: { type: 'string', minLength: 1, maxLength: 1024, nullable: true },
} as const;

const parseSign = bodyParser<SignBody>({
  type: 'object', additionalProperties: false, required: ['entity', 'id', 'meaning'],
  properties: {
    ...target,
    meaning: { type: 'string', minLength: 1, maxLength: 100, pattern: '^\\S(.*\\S)?$' },
    comment: { type: 'string', maxLength: 2000, nullable: true },
  },
} as JSONSchemaType<SignBody>);

const parseRevoke = bodyParser<RevokeBody>({
  type: 'object', additionalProperties: false, required: ['entity', 'id', 'reason'],
  properties: { ...target, reason: { type: 'string', minLength: 1, maxLength: 2000, pattern: '\\S' } },
} as JSONSchemaType<RevokeBody>);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function signatureRoutes(deps: CommandDeps & { passwordLimiter: PasswordLimiter | null }): Router {
  const router = Router();

  router.post('/api/signatures', asyncHandler(async (req, res) => {
    const body = parseSign(req.body ?? {});
    const policy = await policyFor(deps.knex, req.auth!.user);
    const { projectId } = await signedRecord(deps, policy, body.entity, body.id);
    await authorizeMeaning(deps, policy, projectId, body.meaning);
    const reauthentication = await reauthenticate(deps, req, res, body.password);
    const comment = body.comment?.trim() ? body.comment.trim() : null;
    const signature = await sign(withPositionHeader(deps, res), req, { entity: body.entity, id: body.id, projectId }, { meaning: body.meaning, comment, reauthentication });
    res.status(201).json({ data: signature });
  }));

  router.get('/api/signatures', asyncHandler(async (req, res) => {
    const given = queryParameters(req.query as Record<string, unknown>, ['entity', 'id']);
    if (given.entity === undefined) throw invalidArgument('entity', 'is required');
    if (!(SIGNED_ENTITIES as readonly string[]).includes(given.entity)) throw invalidArgument('entity', `must be one of ${SIGNED_ENTITIES.join(', ')}`);
    if (given.id === undefined) throw invalidArgument('id', 'is required');
    const entity = given.entity as SignedEntity;
    const id = parseId('id', given.id);
    const policy = await policyFor(deps.knex, req.auth!.user);
    await signedRecord(deps, policy, entity, id);
    res.setHeader('Cache-Control', 'no-store');
    res.json(await listSignatures(deps, entity, id));
  }));

  router.post('/api/signatures/:signatureId/revoke', asyncHandler(async (req, res) => {
    const signatureId = req.params.signatureId;
    if (!UUID.test(signatureId)) throw invalidArgument('signatureId', 'must be a signature id (a UUID in lower case)');
    const body = parseRevoke(req.body ?? {});
    const policy = await policyFor(deps.knex, req.auth!.user);
    const { projectId } = await signedRecord(deps, policy, body.entity, body.id);
    const reauthentication = await reauthenticate(deps, req, res, body.password);
    await revoke(withPositionHeader(deps, res), req, policy, { entity: body.entity, id: body.id, projectId }, { signatureId, reason: body.reason.trim(), reauthentication });
    const listed = await listSignatures(deps, body.entity, body.id);
    res.json({ data: listed.data.find((s) => s.id === signatureId) });
  }));
  return router;
}
