import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { EventMetadata } from '../../contracts/envelope';
import { type DataOf, EVENT_TYPES, type EventType } from '../../contracts/events';
import { EVENTS_SCHEMA_DIR, loadContracts } from '../../contracts/validator';
import { ContractViolation } from '../../services/shared/errors';
import { withContracts } from '../../services/shared/validatingEventStore';
import { MemoryEventStore } from '../support/memoryEventStore';

const AT = '2024-03-01T10:00:00.000Z';
const META: EventMetadata = { actor: { userId: 1, via: 'api' }, correlationId: 'req-1', causationId: null };

/** One valid `data` per event type: the compiler keeps this list complete and each shape right. */
const VALID: { [T in EventType]: DataOf<T> } = {
  IdBlockReserved: { category: 'project', from: 1, to: 50 },
  UniqueValueClaimed: { scope: 'user.email', value: 'ada@example.com', ownerId: 3 },
  UserRegistered: {
    userId: 3, email: 'ada@example.com', name: 'Ada', passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA',
    access: 'USER', createdAt: AT,
  },
  ApiTokenCreated: { tokenId: 5, userId: 3, name: 'CI', prefix: 'tst_ab12', tokenHash: 'ab'.repeat(32), expiresAt: null, createdAt: AT },
  ApiTokenRevoked: { tokenId: 5, userId: 3, revokedAt: AT },
  ProjectCreated: { projectId: 7, name: 'Checkout', createdAt: AT },
  ProjectUpdated: { projectId: 7, changes: { name: 'Checkout v2', isDeleted: false }, updatedAt: AT },
  ProjectDeleted: { projectId: 7, deletedAt: AT },
  RepositoryFolderCreated: { folderId: 11, projectId: 7, parentId: null, name: 'Cards', createdAt: AT },
  RepositoryFolderUpdated: { folderId: 11, changes: { name: 'Credit cards', parentId: 10 }, updatedAt: AT },
  RepositoryFolderDeleted: { folderId: 11, deletedAt: AT },
  RepositoryCaseCreated: { caseId: 100, projectId: 7, folderId: 11, title: 'Pay by card', description: null, createdAt: AT },
  RepositoryCaseUpdated: { caseId: 100, changes: { title: 'Pay by credit card', description: 'Happy path', folderId: null }, updatedAt: AT },
  RepositoryCaseDeleted: { caseId: 100, deletedAt: AT },
};

interface SchemaFile {
  file: string;
  type: string;
  version: number;
  schema: { $id?: string; title?: string; type?: string; additionalProperties?: unknown; required?: string[]; properties?: Record<string, unknown> };
}

const FILES: SchemaFile[] = fs.readdirSync(EVENTS_SCHEMA_DIR).sort().map((file) => {
  const m = /^([A-Z][A-Za-z]*)\.v([1-9]\d*)\.schema\.json$/.exec(file);
  return {
    file,
    type: m?.[1] ?? '',
    version: m ? Number(m[2]) : 0,
    schema: JSON.parse(fs.readFileSync(path.join(EVENTS_SCHEMA_DIR, file), 'utf8')),
  };
});
const schemaOf = (type: string) => FILES.find((f) => f.type === type)!.schema;

const contracts = loadContracts();

/** The ContractViolation that `check` throws (fails the test when it throws none). */
function violation(event: { type: string; schemaVersion?: number; data: unknown }): ContractViolation {
  try {
    contracts.check(event);
  } catch (error) {
    expect(error).to.be.instanceOf(ContractViolation);
    return error as ContractViolation;
  }
  return expect.fail(`expected ${event.type} ${JSON.stringify(event.data)} to be refused`);
}
/** What `append` fails with, whether it rejects or throws before returning a promise. */
async function appendError(append: () => Promise<unknown>): Promise<unknown> {
  try {
    await append();
  } catch (error) {
    return error;
  }
  return expect.fail('expected the append to fail');
}
const ajvErrors = (v: ContractViolation) => v.errors as { instancePath: string; keyword: string; params: Record<string, unknown> }[];

describe('event contracts', () => {
  describe('the schema files', () => {
    it('are all named <Type>.v<N>.schema.json', () => {
      expect(FILES.length).to.be.greaterThan(0);
      expect(FILES.filter((f) => f.type === '').map((f) => f.file)).to.deep.equal([]);
    });

    it('describe exactly the event types of contracts/events.ts', () => {
      expect(new Set(EVENT_TYPES).size, 'EVENT_TYPES has no repeats').to.equal(EVENT_TYPES.length);
      expect([...new Set(FILES.map((f) => f.type))].sort()).to.deep.equal([...EVENT_TYPES].sort());
      expect(contracts.knownTypes()).to.deep.equal([...EVENT_TYPES].sort());
    });

    for (const f of FILES) {
      it(`${f.file}: an object without additional properties, titled ${f.type}, with $id ${f.type}.v${f.version}`, () => {
        expect(f.schema.type).to.equal('object');
        expect(f.schema.additionalProperties).to.equal(false);
        expect(f.schema.title).to.equal(f.type);
        expect(f.schema.$id).to.equal(`${f.type}.v${f.version}`);
        // Every property is required: optional data is written as null, never left out.
        expect([...(f.schema.required ?? [])].sort()).to.deep.equal(Object.keys(f.schema.properties ?? {}).sort());
      });
    }
  });

  describe('check', () => {
    for (const type of EVENT_TYPES) {
      describe(type, () => {
        const valid = VALID[type] as unknown as Record<string, unknown>;

        it('accepts a valid example, at the latest version and at v1 named explicitly', () => {
          expect(() => contracts.check({ type, data: valid })).not.to.throw();
          expect(() => contracts.check({ type, schemaVersion: 1, data: valid })).not.to.throw();
          expect(contracts.latestVersion(type)).to.equal(1);
        });

        for (const field of schemaOf(type).required ?? []) {
          it(`refuses it without ${field}`, () => {
            const { [field]: _removed, ...data } = valid;
            const v = violation({ type, data });
            expect(v.eventType).to.equal(type);
            expect(v.code).to.equal('event-contract-violation');
            expect(ajvErrors(v).map((e) => [e.keyword, e.params.missingProperty])).to.deep.equal([['required', field]]);
          });
        }

        it('refuses an extra field', () => {
          const v = violation({ type, data: { ...valid, unexpected: 1 } });
          expect(ajvErrors(v).map((e) => [e.keyword, e.params.additionalProperty])).to.deep.equal([['additionalProperties', 'unexpected']]);
        });

        for (const field of Object.keys(schemaOf(type).properties ?? {})) {
          it(`refuses ${field} of the wrong type`, () => {
            const v = violation({ type, data: { ...valid, [field]: [field] } });
            expect(ajvErrors(v).map((e) => e.instancePath)).to.include(`/${field}`);
            expect(ajvErrors(v).every((e) => e.instancePath === `/${field}`)).to.equal(true);
          });
        }
      });
    }

    it('refuses ids that are strings, fractions or below 1', () => {
      for (const projectId of ['7', 7.5, 0]) {
        expect(ajvErrors(violation({ type: 'ProjectCreated', data: { ...VALID.ProjectCreated, projectId } })).map((e) => e.instancePath))
          .to.deep.equal(['/projectId']);
      }
    });

    it('refuses a time that is not an ISO date-time', () => {
      const v = violation({ type: 'ApiTokenCreated', data: { ...VALID.ApiTokenCreated, expiresAt: 'next week' } });
      expect(ajvErrors(v).map((e) => [e.instancePath, e.keyword])).to.deep.equal([['/expiresAt', 'format']]);
    });

    it('refuses an access level outside the enum', () => {
      const v = violation({ type: 'UserRegistered', data: { ...VALID.UserRegistered, access: 'ROOT' } });
      expect(ajvErrors(v).map((e) => [e.instancePath, e.keyword])).to.deep.equal([['/access', 'enum']]);
    });

    for (const type of ['ProjectUpdated', 'RepositoryFolderUpdated', 'RepositoryCaseUpdated'] as const) {
      it(`${type}: refuses empty changes and an unknown changed field`, () => {
        const valid = VALID[type];
        expect(ajvErrors(violation({ type, data: { ...valid, changes: {} } })).map((e) => [e.instancePath, e.keyword]))
          .to.deep.equal([['/changes', 'minProperties']]);
        expect(ajvErrors(violation({ type, data: { ...valid, changes: { isArchived: true } } })).map((e) => [e.instancePath, e.keyword]))
          .to.deep.equal([['/changes', 'additionalProperties']]);
      });
    }

    it('refuses an unknown event type', () => {
      const v = violation({ type: 'ProjectArchived', data: { projectId: 7 } });
      expect(v.eventType).to.equal('ProjectArchived');
      expect(() => contracts.latestVersion('ProjectArchived')).to.throw(ContractViolation);
    });

    it('refuses a version that has no schema', () => {
      expect(violation({ type: 'ProjectCreated', schemaVersion: 2, data: VALID.ProjectCreated }).eventType).to.equal('ProjectCreated');
    });
  });

  describe('withContracts', () => {
    const project = { type: 'ProjectCreated', data: VALID.ProjectCreated };
    const invalid = { type: 'ProjectCreated', data: { ...VALID.ProjectCreated, name: '' } };

    it('refuses an invalid event with ContractViolation and appends nothing', async () => {
      const inner = new MemoryEventStore();
      const store = withContracts(inner, contracts);
      const error = await appendError(() => store.append('project-7', [invalid], { expectedRevision: 'any', metadata: META }));
      expect(error).to.be.instanceOf(ContractViolation);
      expect((error as ContractViolation).eventType).to.equal('ProjectCreated');
      expect(inner.callsOf('append')).to.deep.equal([]);
      expect(await inner.readAll()).to.deep.equal([]);
    });

    it('refuses the whole append when one of its events is invalid', async () => {
      const inner = new MemoryEventStore();
      const store = withContracts(inner, contracts);
      const renamed = { type: 'ProjectUpdated', data: VALID.ProjectUpdated };
      const error = await appendError(() => store.append('project-7', [project, renamed, invalid], { expectedRevision: 'any', metadata: META }));
      expect(error).to.be.instanceOf(ContractViolation);
      expect(inner.callsOf('append')).to.deep.equal([]);
      expect(await inner.readStream('project-7')).to.deep.equal([]);
    });

    it('refuses an event of an unknown type', async () => {
      const inner = new MemoryEventStore();
      const store = withContracts(inner, contracts);
      const error = await appendError(() => store.append('project-7', [{ type: 'ProjectArchived', data: { projectId: 7 } }], { expectedRevision: 'any', metadata: META }));
      expect(error).to.be.instanceOf(ContractViolation);
      expect(inner.calls).to.deep.equal([]);
    });

    it('passes a valid event on, stamped with its schema version', async () => {
      const inner = new MemoryEventStore();
      const result = await withContracts(inner, contracts).append('project-7', [project], { expectedRevision: 'no-stream', metadata: META });
      expect(result).to.deep.equal({ nextRevision: 0n, position: '1' });
      expect(inner.callsOf('append').map((c) => [c.streamId, c.events, c.expectedRevision])).to.deep.equal([
        ['project-7', [{ type: 'ProjectCreated', data: VALID.ProjectCreated, schemaVersion: 1 }], 'no-stream'],
      ]);
    });
  });
});
