import type { OpenAPIV3 } from 'openapi-types';
import { idSchema } from '../shared/validate';
import { errorResponse as error } from '../shared/openapi';

/** GET /api/evidence (tag `evidence`). */
export function evidencePaths(): OpenAPIV3.PathsObject {
  return {
    '/api/evidence': {
      get: {
        operationId: 'evidenceBundle', tags: ['evidence'], summary: 'the evidence bundle of a test run or a milestone (a ZIP), to check offline',
        description: 'events.ndjson (the events behind it, with their chain hashes), runs/<id>.json (runs, run cases, results with the cases as executed, folded from those events), milestone.json, signatures.json, the kept result files and attachments under files/, and manifest.json with SHA-256 of every file. Check it with `npm run verify -- <bundle>` or `testament verify <bundle>` (docs/compliance.md). For whoever may read the run or milestone.',
        parameters: [
          { name: 'runId', in: 'query', required: false, schema: idSchema(), description: 'exactly one of runId and milestoneId' },
          { name: 'milestoneId', in: 'query', required: false, schema: idSchema() },
        ],
        responses: {
          200: {
            description: 'the bundle',
            headers: { 'Content-Disposition': { schema: { type: 'string' }, description: 'attachment; evidence-run-<id>.zip or evidence-milestone-<id>.zip' } },
            content: { 'application/zip': { schema: { type: 'string', format: 'binary' } } },
          },
          400: error('neither or both of runId and milestoneId, a malformed id, another parameter (invalid-argument)'),
          401: error('not authenticated'),
          404: error('no such run or milestone, or one the caller cannot read (not-found)'),
          501: error('the event store keeps no hash chain (integrity-not-kept)'),
          503: error('EventStoreDB: the chain has not reached the bundle\'s events yet (chain-behind); try again shortly'),
        },
      },
    },
  };
}
