import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { EventMetadata } from '../../contracts/envelope';
import { INTEGRATION_PROVIDERS, type EntityName } from '../../contracts/entities';
import type { ExternalDurationUnit, ExternalMappingEntry, ExternalMappingKey, ExternalMappings } from '../../contracts/events';
import { createEntity, type EntityWrite } from '../entities/entity.handlers';
import { registerUser } from '../identity/identity.handlers';
import { createFolder } from '../repository/repository.handlers';
import type { CommandDeps } from '../shared/commandBus';
import { fieldTypeOf } from './fieldTypes';
import { MAPPING_DEFS } from './mappings';
import { plainTextOf } from './richText';
import { allStagedRows, parentsWithChildren, stagedChildren } from './staging';

/**
 * How each dataset of an export becomes rows of this domain: the order (a row's references are
 * written before it), what each row becomes (created, matched to an existing entity, or skipped
 * with a reason), and the write that creates it through the domain's own commands (so every rule,
 * unique claim, read model, search index and audit entry applies as to a row a user creates).
 * Children that the domain keeps inside their owner (a case's steps, tags and field values, a
 * result's step results, a run's and a session's tags, a template's fields) are read with their
 * owner. Creators and creation times are the source's; the events' actor is the importer.
 */

type Row = Record<string, unknown>;

/** What a row becomes. */
export type Decision = { create: true } | { map: number } | { skip: string };

export interface ImportContext {
  knex: Knex;
  jobId: number;
  mappings: ExternalMappings;
  durationUnit: ExternalDurationUnit;
  /** The id a source row of a dataset has in this domain (created, mapped, or planned in this chunk), or null. */
  idOf(dataset: string, sourceId: unknown): number | null;
  /** Repositories that are run snapshots (reference §2): their folders and cases are skipped. */
  snapshotRepos: Set<string>;
  /** Facts looked up once per job: defaults and the existing rows imports match. */
  cache: Map<string, unknown>;
}

export interface DatasetStep {
  dataset: string;
  entity: EntityName;
  /** The mapping list that decides this dataset's rows (configuration datasets). */
  mapping?: ExternalMappingKey;
  /**
   * The source id of the row of the same dataset this row points at (a folder's or milestone's
   * parent), which must be written before it: the chunk's rows are written in waves, each row
   * after the wave that wrote its parent. Without it, a chunk's rows are written independently.
   */
  parentOf?(row: Row): unknown;
  /** The source id of a row (most rows have `id`; join rows are named by their columns). */
  sourceIdOf?(row: Row, index: number): string;
  decide(row: Row, ctx: ImportContext): Promise<Decision> | Decision;
  /** Creates the row under `id`, through the domain's command. `chunk`: the children of the chunk's rows (see `prepare`). */
  write?(row: Row, id: number, ctx: ImportContext, writer: Writer, chunk: ChunkChildren): Promise<unknown>;
  /**
   * What a bulk dataset's row is created with (its source creation time is the row's
   * `created_at`): a chunk of such rows is decided at once and written as one event
   * (ExternalImportRowsWritten) instead of one command per row.
   */
  build?(row: Row, ctx: ImportContext, chunk: ChunkChildren): Promise<EntityWrite> | EntityWrite;
  /** Written in bulk (`build`); the others one by one (`write`). */
  bulk?: true;
  /** Reads the children of the chunk's rows that the writes need (steps of cases, step results of results...). */
  prepare?(rows: Row[], ctx: ImportContext): Promise<ChunkChildren>;
}

export type ChunkChildren = Record<string, Map<string, Row[]>>;

/** Writes as the import: the administrator as actor, the job as correlation, the source's creation time. */
export interface Writer {
  deps: CommandDeps;
  metadata: EventMetadata;
  /** deps whose clock says the source row's creation time (when it has a valid one). */
  at(createdAt: unknown): CommandDeps;
}

// ------------------------------------------------------------------------------- value helpers

const str = (v: unknown): string | null => (typeof v === 'string' ? (v.trim() === '' ? null : v.trim()) : typeof v === 'number' ? String(v) : null);
/** Booleans as the reference says exports write them: true/1/"1"/"true"/"yes". */
const bool = (v: unknown): boolean => v === true || v === 1 || (typeof v === 'string' && ['1', 'true', 'yes'].includes(v.trim().toLowerCase()));
const num = (v: unknown): number | null => {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  return Number.isFinite(n) ? n : null;
};
const time = (v: unknown): string | null => {
  if (typeof v !== 'string' && typeof v !== 'number') return null;
  const ms = typeof v === 'number' ? (v < 1e12 ? v * 1000 : v) : Date.parse(v);
  return Number.isFinite(ms) ? new Date(ms).toISOString() : null;
};
const nameOf = (row: Row, fallback: string) => (str(row.name) ?? str(row.title) ?? str(row.display_name) ?? fallback).slice(0, 255);

const PER_MS: Record<ExternalDurationUnit, number> = { ns: 1e6, us: 1e3, ms: 1, s: 1e-3 };
/** A duration of the export (in its declared unit) in milliseconds, within an int. */
export function toMs(value: unknown, unit: ExternalDurationUnit): number | null {
  const n = num(value);
  if (n === null || n < 0) return null;
  return Math.min(Math.round(n / PER_MS[unit]), 2_147_483_647);
}
const toSeconds = (value: unknown, unit: ExternalDurationUnit) => {
  const ms = toMs(value, unit);
  return ms === null ? null : Math.round(ms / 1000);
};

/** A system name made of a source name: lower case, a-z0-9 and underscores. */
const systemNameOf = (name: string) => name.toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_+|_+$/g, '').slice(0, 100) || 'field';

/** Workflow type from a state's name (reference §4.1, as TestPlanIt guesses it). */
export function workflowTypeOf(name: string): 'NOT_STARTED' | 'IN_PROGRESS' | 'DONE' {
  const n = name.toLowerCase();
  if (/done|complete|closed|retired|rejected|final|approved/.test(n)) return 'DONE';
  if (/progress|review|active|running|started/.test(n)) return 'IN_PROGRESS';
  return 'NOT_STARTED';
}

const PROVIDER_OF: Record<number, (typeof INTEGRATION_PROVIDERS)[number]> = { 1: 'JIRA', 2: 'GITHUB', 3: 'AZURE_DEVOPS', 4: 'JIRA' };

/** A color as the domain keeps it: `#` and 6 hex digits, or null. */
const colorOf = (v: unknown) => {
  const s = str(v)?.replace(/^#/, '');
  return s && /^[0-9a-f]{6}$/i.test(s) ? `#${s.toUpperCase()}` : null;
};

/** A source row's mapping entry (looked up in a map built once per mapping list, not searched per row). */
export function entryOf(mappings: ExternalMappings, key: ExternalMappingKey, sourceId: unknown): ExternalMappingEntry | undefined {
  let byList = ENTRIES.get(mappings);
  if (!byList) ENTRIES.set(mappings, (byList = new Map()));
  let bySource = byList.get(key);
  if (!bySource) byList.set(key, (bySource = new Map(mappings[key].map((e) => [e.sourceId, e]))));
  return bySource.get(String(sourceId));
}
const ENTRIES = new WeakMap<ExternalMappings, Map<ExternalMappingKey, Map<string, ExternalMappingEntry>>>();

/** The entity a row of the export's `fields` becomes: a case or a result field, by its mapping. */
export const fieldKindOf = (mappings: ExternalMappings, sourceId: unknown): 'caseField' | 'resultField' =>
  entryOf(mappings, 'templateFields', sourceId)?.kind ?? 'caseField';

/** The decision of a configuration row: its mapping entry's (a row the mapping does not name is created). */
function byMapping(key: ExternalMappingKey) {
  return (row: Row, ctx: ImportContext): Decision => {
    const entry = entryOf(ctx.mappings, key, row.id);
    if (!entry || entry.action === 'create') return { create: true };
    if (entry.action === 'map') return { map: entry.targetId! };
    return { skip: 'skipped in the mappings' };
  };
}

/** The creator a row keeps: the source creator's user here, else (unknown or skipped) the importer. */
const creatorOf = (row: Row, ctx: ImportContext): { createdById?: number } => {
  const id = ctx.idOf('users', row.created_by);
  return id === null ? {} : { createdById: id };
};

const connectOf = (pairs: Record<string, number | null>) => Object.fromEntries(Object.entries(pairs).filter(([, v]) => v !== null)) as Record<string, number>;

async function cached<T>(ctx: ImportContext, key: string, load: () => Promise<T>): Promise<T> {
  if (!ctx.cache.has(key)) ctx.cache.set(key, await load());
  return ctx.cache.get(key) as T;
}

/** A workflow for a run or session: the mapped state when it is of that scope, else the scope's default. */
async function stateFor(ctx: ImportContext, scope: 'RUNS' | 'SESSIONS' | 'CASES', sourceStateId: unknown): Promise<number | null> {
  const scopes = await cached(ctx, 'workflowScopes', async () => {
    const rows = await ctx.knex('workflows').where({ is_deleted: false }).select('id', 'scope');
    return new Map(rows.map((r: { id: number; scope: string }) => [r.id, r.scope]));
  });
  const mapped = ctx.idOf('states', sourceStateId);
  if (mapped !== null && (scopes.get(mapped) === scope || (scope === 'CASES' && !scopes.has(mapped)))) return mapped;
  return cached(ctx, `defaultState:${scope}`, async () => {
    const row = await ctx.knex('workflows').where({ scope, is_enabled: true, is_deleted: false })
      .orderBy([{ column: 'is_default', order: 'desc' }, 'sort_order', 'id']).first('id');
    return (row?.id as number | undefined) ?? null;
  });
}

/**
 * Each option's place among its field's options, 0, 1, 2...: by its `order` (or `display_order`)
 * where the export gives one, ties and options without one in the order the export lists them
 * (options of one field all at order 0, or with none, keep the export's order).
 */
export function optionOrderOf(options: Array<{ sourceId: string; fieldId: string | null; order: number | null }>): Map<string, number> {
  const byField = new Map<string, Array<{ sourceId: string; order: number | null; listed: number }>>();
  options.forEach((o, listed) => {
    const key = o.fieldId ?? '';
    byField.set(key, [...(byField.get(key) ?? []), { sourceId: o.sourceId, order: o.order, listed }]);
  });
  const places = new Map<string, number>();
  for (const list of byField.values()) {
    list.sort((a, b) => (a.order ?? Infinity) - (b.order ?? Infinity) || a.listed - b.listed)
      .forEach((o, place) => places.set(o.sourceId, place));
  }
  return places;
}

const optionOrder = (ctx: ImportContext) => cached(ctx, 'optionOrder', async () => {
  const rows = await ctx.knex('external_import_staging').where({ job_id: ctx.jobId, dataset: 'field_values' }).orderBy('row_index').select('source_id', 'parent_id', 'row');
  return optionOrderOf((rows as Array<{ source_id: string | null; parent_id: string | null; row: Row }>).filter((r) => r.source_id !== null)
    .map((r) => ({ sourceId: r.source_id!, fieldId: r.parent_id, order: num(r.row.order) ?? num(r.row.display_order) })));
});

function create(entity: EntityName) {
  return (writer: Writer, row: Row, write: EntityWrite, id: number) => createEntity(writer.at(row.created_at), entity, write, writer.metadata, id);
}

// ------------------------------------------------------------------------------- the steps

const configurationSteps: DatasetStep[] = [
  {
    dataset: 'states', entity: 'workflow', mapping: 'states', decide: byMapping('states'),
    write: (row, id, _ctx, w) => create('workflow')(w, row, {
      data: { name: nameOf(row, `State ${String(row.id)}`), scope: 'CASES', workflowType: workflowTypeOf(nameOf(row, '')), isEnabled: true }, connect: {},
    }, id),
  },
  {
    dataset: 'statuses', entity: 'status', mapping: 'statuses', decide: byMapping('statuses'),
    write: (row, id, _ctx, w) => {
      const name = nameOf(row, `Status ${String(row.id)}`);
      return create('status')(w, row, {
        data: {
          name, systemName: systemNameOf(str(row.system_name) ?? name), color: colorOf(row.color),
          isSuccess: bool(row.is_passed), isFailure: bool(row.is_failed), isCompleted: bool(row.is_final) || bool(row.is_passed) || bool(row.is_failed),
        },
        connect: {},
      }, id);
    },
  },
  {
    dataset: 'groups', entity: 'group', mapping: 'groups', decide: byMapping('groups'),
    write: (row, id, _ctx, w) => create('group')(w, row, { data: { name: nameOf(row, `Group ${String(row.id)}`), note: plainTextOf(row.note) }, connect: {} }, id),
  },
  {
    dataset: 'tags', entity: 'tag', mapping: 'tags', decide: byMapping('tags'),
    write: (row, id, _ctx, w) => create('tag')(w, row, { data: { name: nameOf(row, `tag-${String(row.id)}`) }, connect: {} }, id),
  },
  {
    dataset: 'roles', entity: 'role', mapping: 'roles', decide: byMapping('roles'),
    write: (row, id, _ctx, w) => create('role')(w, row, { data: { name: nameOf(row, `Role ${String(row.id)}`) }, connect: {} }, id),
  },
  {
    dataset: 'milestone_types', entity: 'milestoneType', mapping: 'milestoneTypes', decide: byMapping('milestoneTypes'),
    write: (row, id, _ctx, w) => create('milestoneType')(w, row, { data: { name: nameOf(row, `Type ${String(row.id)}`) }, connect: {} }, id),
  },
  {
    dataset: 'configs', entity: 'configuration', mapping: 'configurations', decide: byMapping('configurations'),
    write: (row, id, _ctx, w) => create('configuration')(w, row, { data: { name: nameOf(row, `Configuration ${String(row.id)}`) }, connect: {} }, id),
  },
  {
    dataset: 'fields', entity: 'caseField', mapping: 'templateFields', decide: byMapping('templateFields'),
    write: (row, id, ctx, w) => {
      const entry = entryOf(ctx.mappings, 'templateFields', row.id);
      const name = str(row.name) ?? str(row.system_name) ?? `field_${String(row.id)}`;
      return createEntity(w.at(row.created_at), entry?.kind ?? 'caseField', {
        data: {
          displayName: (str(row.display_name) ?? name).slice(0, 255), systemName: systemNameOf(name), type: fieldTypeOf(row) ?? 'TEXT_STRING',
          hint: plainTextOf(row.hint), isRequired: bool(row.is_required), isRestricted: bool(row.is_restricted), defaultValue: str(row.default_value),
        },
        connect: {},
      }, w.metadata, id);
    },
  },
  {
    dataset: 'field_values', entity: 'fieldOption',
    decide: (row, ctx) => {
      const entry = entryOf(ctx.mappings, 'templateFields', row.field_id);
      if (!entry || entry.action === 'skip') return { skip: 'its field is skipped' };
      if (entry.action === 'map') return { skip: 'its field is mapped to an existing field, whose options stay its own' };
      return ctx.idOf('fields', row.field_id) === null ? { skip: 'its field was not imported' } : { create: true };
    },
    write: async (row, id, ctx, w) => {
      const entry = entryOf(ctx.mappings, 'templateFields', row.field_id);
      const field = ctx.idOf('fields', row.field_id)!;
      return create('fieldOption')(w, row, {
        data: { name: nameOf(row, `Option ${String(row.id)}`), order: (await optionOrder(ctx)).get(String(row.id)) ?? 0 },
        connect: { [entry?.kind ?? 'caseField']: field },
      }, id);
    },
  },
  {
    dataset: 'templates', entity: 'template', mapping: 'templates', decide: byMapping('templates'),
    prepare: async (rows, ctx) => ({ fields: await stagedChildren(ctx.knex, ctx.jobId, 'template_fields', rows.map((r) => String(r.id))) }),
    write: (row, id, ctx, w, children) => {
      const caseFields: number[] = [];
      const resultFields: number[] = [];
      for (const tf of children.fields.get(String(row.id)) ?? []) {
        const field = ctx.idOf('fields', tf.field_id);
        const entry = entryOf(ctx.mappings, 'templateFields', tf.field_id);
        if (field === null || !entry) continue;
        (entry.kind === 'resultField' ? resultFields : caseFields).push(field);
      }
      return create('template')(w, row, {
        data: { name: nameOf(row, `Template ${String(row.id)}`), isEnabled: true },
        connect: {}, links: { caseFields: { set: [...new Set(caseFields)] }, resultFields: { set: [...new Set(resultFields)] } },
      }, id);
    },
  },
  {
    dataset: 'issue_targets', entity: 'integration', mapping: 'issueTrackers', decide: byMapping('issueTrackers'),
    write: (row, id, _ctx, w) => create('integration')(w, row, {
      data: { name: nameOf(row, `Integration ${String(row.id)}`), provider: PROVIDER_OF[num(row.type) ?? 0] ?? 'SIMPLE_URL', url: str(row.url), isEnabled: true },
      connect: {},
    }, id),
  },
  {
    dataset: 'users', entity: 'user', mapping: 'users', decide: byMapping('users'),
    // A placeholder for an account this service does not have: inactive, with a password nobody knows
    // (an administrator activates it and the person sets their own).
    write: (row, id, ctx, w) => {
      const email = MAPPING_DEFS.users.nameOf(row);
      const name = (str(row.name) ?? str(row.full_name) ?? str(row.display_name) ?? str(row.username) ?? email).slice(0, 255);
      return registerUser(w.deps, { email, name, password: `${randomBytes(24).toString('base64url')}aA1!`, access: 'USER', isActive: false }, w.metadata, id).then(() => undefined);
    },
  },
  {
    dataset: 'user_groups', entity: 'groupAssignment',
    sourceIdOf: (row, index) => (row.id !== undefined ? String(row.id) : `${String(row.user_id)}:${String(row.group_id)}#${index}`),
    decide: async (row, ctx) => {
      const user = ctx.idOf('users', row.user_id);
      const group = ctx.idOf('groups', row.group_id);
      if (user === null || group === null) return { skip: user === null ? 'its user is not imported' : 'its group is not imported' };
      const taken = await ctx.knex('group_assignments').where({ user_id: user, group_id: group }).first('id');
      return taken ? { skip: 'the user is in the group already' } : { create: true };
    },
    write: (row, id, ctx, w) => create('groupAssignment')(w, row, { data: {}, connect: { user: ctx.idOf('users', row.user_id)!, group: ctx.idOf('groups', row.group_id)! } }, id),
  },
];

const projectSteps: DatasetStep[] = [
  {
    dataset: 'projects', entity: 'project',
    // A project of the same name is the same project (reference §4.2): its rows are imported into it.
    decide: async (row, ctx) => {
      const name = nameOf(row, `Project ${String(row.id)}`);
      const existing = await ctx.knex('projects').where({ name, is_deleted: false }).first('id');
      return existing ? { map: existing.id as number } : { create: true };
    },
    write: (row, id, ctx, w) => create('project')(w, row, {
      data: {
        name: nameOf(row, `Project ${String(row.id)}`), note: plainTextOf(row.note ?? row.docs),
        isCompleted: bool(row.is_completed), completedAt: bool(row.is_completed) ? time(row.completed_at) : null,
      },
      connect: {}, ...creatorOf(row, ctx),
    }, id),
  },
  {
    dataset: 'milestones', entity: 'milestone', parentOf: (row) => row.parent_id,
    decide: (row, ctx) => {
      if (ctx.idOf('projects', row.project_id) === null) return { skip: 'its project is not imported' };
      if (row.parent_id !== null && row.parent_id !== undefined && ctx.idOf('milestones', row.parent_id) === null) return { skip: 'its parent milestone is not imported (missing, or a cycle)' };
      return { create: true };
    },
    write: (row, id, ctx, w) => create('milestone')(w, row, {
      data: {
        name: nameOf(row, `Milestone ${String(row.id)}`), note: plainTextOf(row.note ?? row.docs),
        isStarted: bool(row.is_started), startedAt: time(row.started_at), isCompleted: bool(row.is_completed), completedAt: time(row.completed_at),
        dueAt: time(row.due_at),
      },
      connect: connectOf({ project: ctx.idOf('projects', row.project_id), parent: ctx.idOf('milestones', row.parent_id), milestoneType: ctx.idOf('milestone_types', row.type_id) }),
      ...creatorOf(row, ctx),
    }, id),
  },
  {
    dataset: 'repository_folders', entity: 'repositoryFolder', parentOf: (row) => row.parent_id,
    decide: (row, ctx) => {
      if (ctx.snapshotRepos.has(String(row.repo_id))) return { skip: 'a run snapshot of the repository (reference §2)' };
      if (ctx.idOf('projects', row.project_id) === null) return { skip: 'its project is not imported' };
      if (row.parent_id !== null && row.parent_id !== undefined && ctx.idOf('repository_folders', row.parent_id) === null) return { skip: 'its parent folder is not imported (missing, or a cycle)' };
      return { create: true };
    },
    write: (row, id, ctx, w) => createFolder(w.at(row.created_at), {
      name: nameOf(row, `Folder ${String(row.id)}`), projectId: ctx.idOf('projects', row.project_id)!, parentId: ctx.idOf('repository_folders', row.parent_id),
    }, w.metadata, id).then(() => undefined),
  },
];

/** Custom field values of a row: `custom_<system name>` columns and join rows (field, option), to the fields imported or mapped. */
async function fieldValuesOf(ctx: ImportContext, row: Row, joins: Row[], kind: 'caseField' | 'resultField'): Promise<Array<{ data: Row; connect: Record<string, number> }>> {
  const fields = await cached(ctx, `fieldsBySystemName:${kind}`, async () => {
    const bySystemName = new Map<string, { sourceId: string; id: number }>();
    const staged = await ctx.knex('external_import_staging').where({ job_id: ctx.jobId, dataset: 'fields' }).select('source_id', 'row');
    for (const r of staged as Array<{ source_id: string; row: Row }>) {
      const entry = entryOf(ctx.mappings, 'templateFields', r.source_id);
      const id = ctx.idOf('fields', r.source_id);
      if (!entry || id === null || (entry.kind ?? 'caseField') !== kind) continue;
      const name = str(r.row.name) ?? str(r.row.system_name);
      if (name) bySystemName.set(name.toLowerCase(), { sourceId: r.source_id, id });
    }
    return bySystemName;
  });
  const values = new Map<number, unknown>();
  for (const [column, value] of Object.entries(row)) {
    if (!column.startsWith('custom_') || value === null || value === undefined) continue;
    const field = fields.get(column.slice('custom_'.length).toLowerCase());
    if (field) values.set(field.id, typeof value === 'string' ? plainTextOf(value) : value);
  }
  for (const join of joins) {
    const field = ctx.idOf('fields', join.field_id);
    const option = ctx.idOf('field_values', join.value_id);
    if (field === null || option === null) continue;
    const list = values.get(field);
    values.set(field, Array.isArray(list) ? [...list, option] : [option]);
  }
  return [...values].map(([field, value]) => ({ data: { value }, connect: { field } }));
}

const repositorySteps: DatasetStep[] = [
  {
    dataset: 'repository_cases', entity: 'repositoryCase',
    decide: (row, ctx) => {
      if (ctx.snapshotRepos.has(String(row.repo_id))) return { skip: 'a run snapshot of the repository (reference §2)' };
      if (ctx.idOf('projects', row.project_id) === null) return { skip: 'its project is not imported' };
      return { create: true };
    },
    prepare: async (rows, ctx) => {
      const ids = rows.map((r) => String(r.id));
      return {
        steps: await stagedChildren(ctx.knex, ctx.jobId, 'repository_case_steps', ids),
        tags: await stagedChildren(ctx.knex, ctx.jobId, 'repository_case_tags', ids),
        values: await stagedChildren(ctx.knex, ctx.jobId, 'repository_case_values', ids),
      };
    },
    bulk: true,
    build: async (row, ctx, children) => {
      const key = String(row.id);
      const steps = (children.steps.get(key) ?? [])
        .sort((a, b) => (num(a.display_order) ?? 0) - (num(b.display_order) ?? 0))
        .map((s, order) => ({
          data: {
            step: joinText(plainTextOf(s.text1), plainTextOf(s.text2), 'Data') ?? '-',
            expectedResult: joinText(plainTextOf(s.text3), plainTextOf(s.text4), 'Data'),
            order,
          },
          connect: {},
        }));
      const tags = (children.tags.get(key) ?? []).map((t) => ctx.idOf('tags', t.tag_id)).filter((t): t is number => t !== null);
      const fieldValues = await fieldValuesOf(ctx, row, children.values.get(key) ?? [], 'caseField');
      const folder = ctx.idOf('repository_folders', row.folder_id);
      return {
        data: {
          title: nameOf(row, `Case ${key}`), description: plainTextOf(row.note ?? row.description ?? row.docs), className: str(row.key),
          estimate: toSeconds(row.estimate, ctx.durationUnit), automated: bool(row.automated), order: num(row.display_order) ?? 0,
        },
        connect: connectOf({
          project: ctx.idOf('projects', row.project_id), folder, template: ctx.idOf('templates', row.template_id), state: await stateFor(ctx, 'CASES', row.state_id),
        }),
        links: { tags: { set: [...new Set(tags)] } },
        children: { steps: { create: steps }, fieldValues: { create: fieldValues } },
        ...creatorOf(row, ctx),
      };
    },
  },
];

const runSteps: DatasetStep[] = [
  {
    dataset: 'runs', entity: 'testRun',
    decide: (row, ctx) => (ctx.idOf('projects', row.project_id) === null ? { skip: 'its project is not imported' } : { create: true }),
    prepare: async (rows, ctx) => ({ tags: await stagedChildren(ctx.knex, ctx.jobId, 'run_tags', rows.map((r) => String(r.id))) }),
    bulk: true,
    build: async (row, ctx, children) => {
      const tags = (children.tags.get(String(row.id)) ?? []).map((t) => ctx.idOf('tags', t.tag_id)).filter((t): t is number => t !== null);
      return {
        data: {
          name: nameOf(row, `Run ${String(row.id)}`), note: plainTextOf(row.note ?? row.docs), testRunType: 'REGULAR',
          isCompleted: bool(row.is_closed) || bool(row.is_completed), completedAt: time(row.closed_at ?? row.completed_at), elapsedMs: toMs(row.elapsed, ctx.durationUnit),
        },
        connect: connectOf({
          project: ctx.idOf('projects', row.project_id), configuration: ctx.idOf('configs', row.config_id),
          milestone: ctx.idOf('milestones', row.milestone_id), state: await stateFor(ctx, 'RUNS', row.state_id),
        }),
        links: { tags: { set: [...new Set(tags)] } },
        ...creatorOf(row, ctx),
      };
    },
  },
  {
    dataset: 'run_tests', entity: 'testRunCase',
    decide: async (row, ctx) => {
      const run = ctx.idOf('runs', row.run_id);
      const repositoryCase = ctx.idOf('repository_cases', row.case_id);
      if (run === null) return { skip: 'its run is not imported' };
      // Unselected tests are dropped unless they have results (reference §4.4).
      if (row.is_selected !== undefined && row.is_selected !== null && !bool(row.is_selected)
        && (await parentsWithChildren(ctx.knex, ctx.jobId, 'run_results', [String(row.id)])).size === 0) {
        return { skip: 'not selected in its run, and without results' };
      }
      if (repositoryCase === null) return { skip: 'its case is not imported' };
      // The same case twice in a run: the first is the run's, later ones are skipped (a run holds a case once).
      // Runs are this job's own: their cases written by earlier chunks (of this process or one that stopped) are
      // read once per job from the read model, which has them by now.
      const byRun = await cached(ctx, 'runCasesOfJob', async () => {
        const rows = await ctx.knex('test_run_cases').where({ external_import_job_id: ctx.jobId, is_deleted: false }).select('test_run_id', 'repository_case_id');
        const map = new Map<number, Set<number>>();
        for (const r of rows as Array<{ test_run_id: number; repository_case_id: number }>) {
          if (!map.has(r.test_run_id)) map.set(r.test_run_id, new Set());
          map.get(r.test_run_id)!.add(r.repository_case_id);
        }
        return map;
      });
      if (!byRun.has(run)) byRun.set(run, new Set());
      const seen = byRun.get(run)!;
      if (seen.has(repositoryCase)) return { skip: 'the run has this case already' };
      seen.add(repositoryCase);
      return { create: true };
    },
    bulk: true,
    build: (row, ctx) => ({
      data: { order: num(row.display_order) ?? num(row.order) ?? 0 },
      connect: connectOf({
        testRun: ctx.idOf('runs', row.run_id), repositoryCase: ctx.idOf('repository_cases', row.case_id),
        status: ctx.idOf('statuses', row.status_id), assignedTo: ctx.idOf('users', row.assignee_id),
      }),
    }),
  },
  {
    dataset: 'run_results', entity: 'testRunResult',
    decide: (row, ctx) => {
      if (bool(row.is_deleted)) return { skip: 'deleted in the source' };
      if (ctx.idOf('run_tests', row.test_id) === null) return { skip: 'its run test is not imported' };
      if (ctx.idOf('statuses', row.status_id) === null) return { skip: 'its status is not imported' };
      return { create: true };
    },
    prepare: async (rows, ctx) => {
      // A step result belongs to a step of the result's case: the case's steps here, in their order
      // (read for the results that have step results only: most have none).
      const steps = await stagedChildren(ctx.knex, ctx.jobId, 'run_result_steps', rows.map((r) => String(r.id)));
      const runCases = [...new Set(rows.filter((r) => steps.has(String(r.id))).map((r) => ctx.idOf('run_tests', r.test_id))
        .filter((id): id is number => id !== null && id > 0))];
      const ofCases = runCases.length === 0 ? [] : await ctx.knex('test_run_cases as c').join('steps as s', 's.repository_case_id', 'c.repository_case_id')
        .whereRaw('c.id = ANY(?::integer[])', [runCases]).orderBy(['c.id', 's.sort_order', 's.id']).select('c.id as run_case', 's.id as step');
      const caseSteps = new Map<string, Row[]>();
      for (const r of ofCases as Array<{ run_case: number; step: number }>) {
        const list = caseSteps.get(String(r.run_case)) ?? [];
        list.push({ step: r.step });
        caseSteps.set(String(r.run_case), list);
      }
      return { steps, caseSteps };
    },
    bulk: true,
    build: async (row, ctx, children) => {
      const ofCase = children.caseSteps.get(String(ctx.idOf('run_tests', row.test_id))) ?? [];
      // Matched by position: the n-th step result (by display order) is the case's n-th step; one beyond the case's steps is not kept.
      const stepResults = (children.steps.get(String(row.id)) ?? [])
        .sort((a, b) => (num(a.display_order) ?? 0) - (num(b.display_order) ?? 0))
        .map((s, i) => ({ s, step: ofCase[i]?.step as number | undefined }))
        .filter(({ step }) => step !== undefined)
        .map(({ s, step }) => ({
          data: { notes: plainTextOf(s.comment), durationMs: toMs(s.elapsed, ctx.durationUnit) },
          connect: connectOf({ step: step!, status: ctx.idOf('statuses', s.status_id) }),
        }));
      const fieldValues = await fieldValuesOf(ctx, row, [], 'resultField');
      return {
        data: { durationMs: toMs(row.elapsed, ctx.durationUnit), executedAt: time(row.created_at), notes: plainTextOf(row.comment), attempt: 1 },
        connect: connectOf({
          testRun: ctx.idOf('runs', row.run_id), testRunCase: ctx.idOf('run_tests', row.test_id), status: ctx.idOf('statuses', row.status_id),
          executedBy: ctx.idOf('users', row.created_by),
        }),
        children: { stepResults: { create: stepResults }, fieldValues: { create: fieldValues } },
      };
    },
  },
  {
    dataset: 'sessions', entity: 'session',
    decide: (row, ctx) => (ctx.idOf('projects', row.project_id) === null ? { skip: 'its project is not imported' } : { create: true }),
    prepare: async (rows, ctx) => ({ tags: await stagedChildren(ctx.knex, ctx.jobId, 'session_tags', rows.map((r) => String(r.id))) }),
    bulk: true,
    build: async (row, ctx, children) => {
      const tags = (children.tags.get(String(row.id)) ?? []).map((t) => ctx.idOf('tags', t.tag_id)).filter((t): t is number => t !== null);
      return {
        data: {
          name: nameOf(row, `Session ${String(row.id)}`), note: plainTextOf(row.note ?? row.docs), mission: plainTextOf(row.custom_mission ?? row.mission),
          estimate: toSeconds(row.estimate, ctx.durationUnit), elapsedMs: toMs(row.elapsed, ctx.durationUnit),
          isCompleted: bool(row.is_closed), completedAt: time(row.closed_at),
        },
        connect: connectOf({
          project: ctx.idOf('projects', row.project_id), template: ctx.idOf('templates', row.template_id), configuration: ctx.idOf('configs', row.config_id),
          milestone: ctx.idOf('milestones', row.milestone_id), state: await stateFor(ctx, 'SESSIONS', row.state_id), assignedTo: ctx.idOf('users', row.assignee_id),
        }),
        links: { tags: { set: [...new Set(tags)] } },
        ...creatorOf(row, ctx),
      };
    },
  },
  {
    dataset: 'session_results', entity: 'sessionResult',
    decide: (row, ctx) => {
      if (ctx.idOf('sessions', row.session_id) === null) return { skip: 'its session is not imported' };
      if (ctx.idOf('statuses', row.status_id) === null) return { skip: 'its status is not imported' };
      return { create: true };
    },
    bulk: true,
    build: (row, ctx) => ({
      data: { resultData: plainTextOf(row.comment), durationMs: toMs(row.elapsed, ctx.durationUnit) },
      connect: connectOf({ session: ctx.idOf('sessions', row.session_id), status: ctx.idOf('statuses', row.status_id) }),
      ...creatorOf(row, ctx),
    }),
  },
];

function joinText(first: string | null, second: string | null, label: string): string | null {
  if (first && second) return `${first}\n\n${label}: ${second}`;
  return first ?? (second ? `${label}: ${second}` : null);
}

/** Every dataset the import writes, in the order it writes them. */
export const IMPORT_STEPS: readonly DatasetStep[] = [...configurationSteps, ...projectSteps, ...repositorySteps, ...runSteps];

/** Datasets read with their owner's rows (not steps of their own). */
export const READ_WITH_OWNER: Readonly<Record<string, string>> = {
  template_fields: 'templates', repository_case_steps: 'repository_cases', repository_case_tags: 'repository_cases',
  repository_case_values: 'repository_cases', run_tags: 'runs', run_result_steps: 'run_results', session_tags: 'sessions',
  repositories: 'repository_folders and repository_cases (run snapshots are skipped)',
};

/**
 * Datasets read with their owner's rows, by the column naming the owner, and what else a row needs
 * to be kept (a template's field, a case's tag...). A row is kept when its owner is created by the
 * import and what it needs is imported; else it is skipped with the reason (preview, job counts).
 */
export const CHILD_DATASETS: ReadonlyMap<string, { owner: string; field: string; word: string; needs?: { dataset: string; field: string; word: string } }> = new Map(Object.entries({
  template_fields: { owner: 'templates', field: 'template_id', word: 'template', needs: { dataset: 'fields', field: 'field_id', word: 'field' } },
  repository_case_steps: { owner: 'repository_cases', field: 'case_id', word: 'case' },
  repository_case_tags: { owner: 'repository_cases', field: 'case_id', word: 'case', needs: { dataset: 'tags', field: 'tag_id', word: 'tag' } },
  repository_case_values: { owner: 'repository_cases', field: 'case_id', word: 'case', needs: { dataset: 'fields', field: 'field_id', word: 'field' } },
  run_tags: { owner: 'runs', field: 'run_id', word: 'run', needs: { dataset: 'tags', field: 'tag_id', word: 'tag' } },
  run_result_steps: { owner: 'run_results', field: 'result_id', word: 'result' },
  session_tags: { owner: 'sessions', field: 'session_id', word: 'session', needs: { dataset: 'tags', field: 'tag_id', word: 'tag' } },
}));

/**
 * What becomes of a row read with its owner: null (kept with its owner) or the reason it is
 * skipped. `owner` says whether the owner row is created, mapped onto an existing entity (which
 * keeps what it has: a mapped template keeps its own fields) or not imported.
 */
export function childSkipReason(dataset: string, row: Row, owner: (dataset: string, sourceId: unknown) => 'created' | 'mapped' | null, ctx: Pick<ImportContext, 'idOf'>): string | null {
  const child = CHILD_DATASETS.get(dataset);
  if (!child) return null;
  const of = owner(child.owner, row[child.field]);
  if (of === null) return `its ${child.word} is not imported`;
  if (of === 'mapped') return `its ${child.word} is mapped to an existing ${child.word}, which keeps its own`;
  if (child.needs && ctx.idOf(child.needs.dataset, row[child.needs.field]) === null) return `its ${child.needs.word} is not imported`;
  return null;
}

/** Rows of a dataset read with its owner, kept (`created`) and skipped: for the job's counts (the small ones: the rows are read whole). */
export async function childCounts(ctx: Pick<ImportContext, 'knex' | 'jobId' | 'idOf'>, dataset: string, owner: Parameters<typeof childSkipReason>[2]): Promise<{ created: number; mapped: number; skipped: number }> {
  const counts = { created: 0, mapped: 0, skipped: 0 };
  for (const row of await allStagedRows(ctx.knex, ctx.jobId, dataset)) {
    if (childSkipReason(dataset, row, owner, ctx) === null) counts.created++;
    else counts.skipped++;
  }
  return counts;
}

/** Datasets this domain has no place for yet: listed on the job as skipped, with the reason. */
export const NOT_PLACED: ReadonlyMap<string, string> = new Map(Object.entries({
  project_links: 'projects have no links here', milestone_links: 'milestones have no links here', run_links: 'runs have no links here',
  issues: 'this service has no issue entity yet', milestone_issues: 'this service has no issue entity yet', repository_case_issues: 'this service has no issue entity yet',
  run_issues: 'this service has no issue entity yet', run_result_issues: 'this service has no issue entity yet', session_issues: 'this service has no issue entity yet',
  session_result_issues: 'this service has no issue entity yet', session_values: 'sessions have no custom field values here',
  automation_cases: 'automation datasets are not imported yet', automation_runs: 'automation datasets are not imported yet',
  automation_run_tests: 'automation datasets are not imported yet', automation_run_fields: 'automation datasets are not imported yet',
  automation_run_test_fields: 'automation datasets are not imported yet', automation_run_links: 'automation datasets are not imported yet',
  automation_run_tags: 'automation datasets are not imported yet',
}));
