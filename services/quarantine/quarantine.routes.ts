import { Router } from 'express';
import { ENTITIES } from '../../contracts/entities';
import { authorizeWrite, policyFor } from '../model/policy';
import { findRowById, isRowVisible } from '../model/query';
import { type CommandDeps, readYourWrites, withPositionHeader } from '../shared/commandBus';
import { handleCommand } from '../shared/decider';
import { metadataFor } from '../shared/context';
import { notFound } from '../shared/errors';
import { asyncHandler } from '../shared/http';
import { bodyParser, parseId, invalidArgument, queryParameters } from '../shared/validate';
import { quarantineDecider, quarantineStream } from './quarantine.decider';

/**
 * Quarantine (docs/history.md): POST /api/cases/{id}/quarantine and /release with a reason, by
 * whoever may change the case (its project's TestCaseRepository add/edit); GET /api/quarantine
 * lists a project's quarantined cases for whoever may read the project. A quarantined case's
 * results stay recorded and visible; run comparisons report it apart.
 */

const parseReason = bodyParser<{ reason: string }>({
  type: 'object', additionalProperties: false, required: ['reason'],
  properties: { reason: { type: 'string', minLength: 1, maxLength: 2000, pattern: '\\S' } },
});

export interface QuarantineEntry { caseId: number; title: string; reason: string; since: string; by: { userId: number | null; name: string | null } }

export function quarantineRoutes(deps: CommandDeps): Router {
  const router = Router();
  const change = (type: 'Quarantine' | 'Release') => asyncHandler(async (req, res) => {
    const caseId = parseId('id', req.params.id);
    const { reason } = parseReason(req.body ?? {});
    const policy = await policyFor(deps.knex, req.auth!.user);
    const seen = await findRowById(deps.knex, ENTITIES.repositoryCase, caseId, { fields: ['id', 'projectId', 'isDeleted'], relations: {}, counts: {} }, policy.read);
    if (!seen || seen.isDeleted === true) throw notFound(`Case ${caseId} does not exist`, { path: 'id', id: caseId });
    await authorizeWrite(deps.knex, policy, ENTITIES.repositoryCase, 'update', { id: caseId });
    const command = { type, caseId, projectId: seen.projectId as number, reason: reason.trim(), now: deps.clock().toISOString() };
    const outcome = await handleCommand(deps.store, quarantineStream(caseId), quarantineDecider, command, metadataFor(req.auth!, req));
    await readYourWrites(withPositionHeader(deps, res), { position: outcome.position, streamId: outcome.streamId });
    res.json({ data: { caseId, quarantined: type === 'Quarantine', reason: command.reason, at: command.now } });
  });
  router.post('/api/cases/:id/quarantine', change('Quarantine'));
  router.post('/api/cases/:id/release', change('Release'));

  router.get('/api/quarantine', asyncHandler(async (req, res) => {
    const given = queryParameters(req.query as Record<string, unknown>, ['projectId']);
    if (given.projectId === undefined) throw invalidArgument('projectId', 'is required');
    const projectId = parseId('projectId', given.projectId);
    const policy = await policyFor(deps.knex, req.auth!.user);
    if (!(await isRowVisible(deps.knex, ENTITIES.project, projectId, policy.read))) {
      throw notFound(`Project ${projectId} does not exist`, { path: 'projectId', id: projectId });
    }
    const rows = (await deps.knex('case_quarantines as q').join('repository_cases as c', 'c.id', 'q.repository_case_id').leftJoin('users as u', 'u.id', 'q.changed_by_id')
      .where({ 'q.project_id': projectId, 'q.is_quarantined': true }).orderBy('q.quarantined_since').orderBy('q.repository_case_id')
      .select('q.repository_case_id', 'c.title', 'q.reason', 'q.quarantined_since', 'q.changed_by_id', 'u.name')) as
      { repository_case_id: number; title: string; reason: string; quarantined_since: Date; changed_by_id: number | null; name: string | null }[];
    res.setHeader('Cache-Control', 'no-store');
    res.json({
      data: rows.map((r): QuarantineEntry => ({
        caseId: r.repository_case_id, title: r.title, reason: r.reason, since: r.quarantined_since.toISOString(), by: { userId: r.changed_by_id, name: r.name },
      })),
    });
  }));
  return router;
}
