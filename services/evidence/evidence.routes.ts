import { Router } from 'express';
import type { Logger } from 'pino';
import type { FileStore } from '../files/fileStore';
import { policyFor } from '../model/policy';
import type { CommandDeps } from '../shared/commandBus';
import { asyncHandler } from '../shared/http';
import { parseId, invalidArgument, queryParameters } from '../shared/validate';
import { chainedStore } from '../signatures/content';
import { signedRecord } from '../signatures/signatures';
import { writeEvidenceZip } from './bundle';
import { collectEvidence, type EvidenceSubject } from './collect';

/** The subject of GET /api/evidence: exactly one of runId and milestoneId. */
export function parseEvidenceQuery(query: Record<string, unknown>): EvidenceSubject {
  const given = queryParameters(query, ['runId', 'milestoneId']);
  if ((given.runId === undefined) === (given.milestoneId === undefined)) throw invalidArgument('runId', 'give exactly one of runId and milestoneId');
  return given.runId !== undefined ? { entity: 'testRun', id: parseId('runId', given.runId) } : { entity: 'milestone', id: parseId('milestoneId', given.milestoneId!) };
}

/** GET /api/evidence?runId= | ?milestoneId=: the evidence bundle (a ZIP), for whoever may read the run or milestone. */
export function evidenceRoutes(deps: CommandDeps & { files: FileStore; logger: Logger }): Router {
  const router = Router();
  router.get('/api/evidence', asyncHandler(async (req, res) => {
    const subject = parseEvidenceQuery(req.query as Record<string, unknown>);
    chainedStore(deps.store);
    const policy = await policyFor(deps.knex, req.auth!.user);
    const { projectId } = await signedRecord(deps, policy, subject.entity, subject.id);
    const evidence = await collectEvidence(deps, { ...subject, projectId });
    const generatedAt = deps.clock();
    res.status(200).type('application/zip').attachment(`evidence-${subject.entity === 'testRun' ? 'run' : 'milestone'}-${subject.id}.zip`);
    res.setHeader('Cache-Control', 'no-store');
    try {
      await writeEvidenceZip(evidence, res, { files: deps.files, generatedAt, generatedBy: { userId: req.auth!.user.id, name: req.auth!.user.name } });
    } catch (err) {
      // The answer has begun: the client sees a cut ZIP (which verification refuses), the log says why.
      deps.logger.error({ err, correlationId: req.correlationId, subject }, 'evidence bundle failed while streaming');
      res.destroy(err as Error);
    }
  }));
  return router;
}
