import { randomUUID } from 'node:crypto';
import type { EventMetadata, NewEvent } from '../contracts/envelope';
import type { DataOf } from '../contracts/events';
import type { AppendRequest } from '../infra/eventstore/postgres';
import { seededRandom } from './support';

/**
 * A realistic event log for the read model, generated batch by batch (never held whole):
 * ~2% ProjectCreated, ~8% RepositoryFolderCreated (in existing projects, some under a parent),
 * ~60% RepositoryCaseCreated, ~25% RepositoryCaseUpdated, ~5% RepositoryFolderUpdated/ProjectUpdated.
 * Every request carries the exact expected revision of its stream, tracked here.
 */
export type SeedCategory = 'projects' | 'folders' | 'cases';

const WORDS = (
  'login logout password reset email user admin project folder case run result export import report filter search ' +
  'page list table column sort order date time zone invoice payment refund cart checkout address profile avatar ' +
  'upload download file image attachment comment mention notification badge token session cookie timeout retry ' +
  'error warning banner modal dialog button link menu sidebar header footer mobile tablet desktop browser'
).split(' ');
const START = Date.parse('2023-01-01T00:00:00.000Z');

export class SeedLog {
  readonly counts: Record<string, number> = {};
  /** Events per read-model table: sum(revision + 1) over its rows must equal this. */
  readonly eventsPerCategory: Record<SeedCategory, number> = { projects: 0, folders: 0, cases: 0 };
  events = 0;
  private readonly random: () => number;
  /** Current revision per aggregate, indexed by id (ids are 1..n, index 0 unused). */
  private readonly projectRevision: number[] = [0];
  private readonly folderRevision: number[] = [0];
  private readonly caseRevision: number[] = [0];
  private readonly caseProject: number[] = [0];
  private readonly foldersOfProject: number[][] = [[]];

  constructor(seed = 20240601) {
    this.random = seededRandom(seed);
  }

  get projects(): number { return this.projectRevision.length - 1; }
  get folders(): number { return this.folderRevision.length - 1; }
  get cases(): number { return this.caseRevision.length - 1; }

  /** The next `size` append requests, one event each. */
  nextBatch(size: number): AppendRequest[] {
    const batch: AppendRequest[] = [];
    for (let i = 0; i < size; i++) batch.push(this.next());
    return batch;
  }

  private next(): AppendRequest {
    const at = new Date(START + this.events * 1000).toISOString();
    const r = this.random();
    let request: AppendRequest;
    if (r < 0.02 || this.projects === 0) request = this.projectCreated(at);
    else if (r < 0.10 || this.folders === 0) request = this.folderCreated(at);
    else if (r < 0.70 || this.cases === 0) request = this.caseCreated(at);
    else if (r < 0.95) request = this.caseUpdated(at);
    else if (r < 0.975) request = this.folderUpdated(at);
    else request = this.projectUpdated(at);
    this.events++;
    const type = request.events[0].type;
    this.counts[type] = (this.counts[type] ?? 0) + 1;
    return request;
  }

  private pick(n: number): number {
    return 1 + Math.floor(this.random() * n);
  }

  private words(min: number, max: number): string {
    const n = min + Math.floor(this.random() * (max - min + 1));
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(WORDS[Math.floor(this.random() * WORDS.length)]);
    const text = out.join(' ');
    return text[0].toUpperCase() + text.slice(1);
  }

  private request(streamId: string, expected: number, type: string, data: Record<string, unknown>): AppendRequest {
    const event: NewEvent = { type, data, schemaVersion: 1 };
    const metadata: EventMetadata = { actor: { userId: 1, via: 'api' }, correlationId: randomUUID(), causationId: null };
    return { streamId, events: [event], expectedRevision: expected < 0 ? 'no-stream' : BigInt(expected), metadata };
  }

  private projectCreated(at: string): AppendRequest {
    const projectId = this.projectRevision.push(0) - 1;
    this.foldersOfProject.push([]);
    this.eventsPerCategory.projects++;
    return this.request(`project-${projectId}`, -1, 'ProjectCreated', { projectId, name: this.words(1, 4), createdAt: at });
  }

  private projectUpdated(at: string): AppendRequest {
    const projectId = this.pick(this.projects);
    const expected = this.projectRevision[projectId]++;
    this.eventsPerCategory.projects++;
    return this.request(`project-${projectId}`, expected, 'ProjectUpdated', { projectId, changes: { name: this.words(1, 4) }, updatedAt: at });
  }

  private folderCreated(at: string): AppendRequest {
    const projectId = this.pick(this.projects);
    const siblings = this.foldersOfProject[projectId];
    const parentId = siblings.length > 0 && this.random() < 0.6 ? siblings[Math.floor(this.random() * siblings.length)] : null;
    const folderId = this.folderRevision.push(0) - 1;
    siblings.push(folderId);
    this.eventsPerCategory.folders++;
    return this.request(`repositoryFolder-${folderId}`, -1, 'RepositoryFolderCreated', {
      folderId, projectId, parentId, name: this.words(1, 3), createdAt: at,
    });
  }

  private folderUpdated(at: string): AppendRequest {
    const folderId = this.pick(this.folders);
    const expected = this.folderRevision[folderId]++;
    this.eventsPerCategory.folders++;
    const changes: DataOf<'RepositoryFolderUpdated'>['changes'] = this.random() < 0.8
      ? { name: this.words(1, 3) }
      : { parentId: null };
    return this.request(`repositoryFolder-${folderId}`, expected, 'RepositoryFolderUpdated', { folderId, changes, updatedAt: at });
  }

  private folderIn(projectId: number): number | null {
    const folders = this.foldersOfProject[projectId];
    return folders.length > 0 && this.random() < 0.95 ? folders[Math.floor(this.random() * folders.length)] : null;
  }

  private caseCreated(at: string): AppendRequest {
    const projectId = this.pick(this.projects);
    const caseId = this.caseRevision.push(0) - 1;
    this.caseProject.push(projectId);
    this.eventsPerCategory.cases++;
    return this.request(`repositoryCase-${caseId}`, -1, 'RepositoryCaseCreated', {
      caseId, projectId, folderId: this.folderIn(projectId), title: this.words(3, 10),
      description: this.random() < 0.8 ? this.words(8, 30) : null, createdAt: at,
    });
  }

  private caseUpdated(at: string): AppendRequest {
    const caseId = this.pick(this.cases);
    const expected = this.caseRevision[caseId]++;
    this.eventsPerCategory.cases++;
    const r = this.random();
    const changes: Record<string, unknown> = r < 0.5
      ? { title: this.words(3, 10) }
      : r < 0.9 ? { description: this.words(8, 30) } : { folderId: this.folderIn(this.caseProject[caseId]) };
    return this.request(`repositoryCase-${caseId}`, expected, 'RepositoryCaseUpdated', { caseId, changes, updatedAt: at });
  }
}
