/**
 * `npx tsx scripts/domain-doc.ts > docs/domain.md`: the entity reference, written from the
 * catalogue itself (test/contracts/domainDoc.unit.spec.ts checks that docs/domain.md is current).
 */
import { ENTITIES, type EntityDef, type FieldDef, type RelationDef, writtenAs } from '../contracts/entities';
import { eventTypesOf, linkField, linkRelations, streamOf } from '../contracts/entityEvents';
import { LIMITS } from '../contracts/limits';
import { CREATE_ONLY_FIELDS, WRITE_ONLY_INPUTS } from '../services/model/writeArgs';

/** Entities with an aggregate of their own, whose events are not the generic three. */
const OWN_EVENTS: Partial<Record<string, string[]>> = {
  user: ['UserRegistered', 'UserUpdated', 'UserDeactivated', 'UserReactivated', 'UserPasswordChanged', 'UserDeleted'],
};

const INTRO = `# The domain: every entity of the model API

Generated from the entity catalogue (\`contracts/entities.ts\`) by
\`npx tsx scripts/domain-doc.ts > docs/domain.md\`. Every entity is reached at
\`/api/model/{entity}/{operation}\` (see the README and \`/docs/api\`).

How an entity is written:

- **aggregate**: its own event stream (\`<entity>-<id>\`) with \`<Entity>Created\`, \`<Entity>Updated\`
  (only what changed) and \`<Entity>Deleted\`, decided by the generic entity aggregate
  (\`services/entities/\`): every referenced row must exist, not be deleted, and belong to the same
  project; unique values are claimed on a stream of their own. Repository folders have an
  aggregate of their own (a tree that must stay acyclic), and so have users (\`services/identity\`:
  the e-mail claimed for good (but for a placeholder user an external import's rollback deletes: docs/migration.md), the password hashed, deactivation and deletion end sessions and
  tokens at once; only administrators write users, and none may demote, deactivate or delete themselves).
- **owned**: rows that exist only inside their parent (a case's steps, its field values, a
  result's step results); written with nested \`create\` / \`delete\` / \`deleteMany\` on the parent,
  carried whole on the parent's events.
- **projected**: derived by the read model (case versions); read-only through the model API.

Limits (\`contracts/limits.ts\`, the same for the model API, the event contracts and what the read
model stores): each written string, list and JSON value says its own below (\`≤ N characters\`,
\`≤ N items\`, \`≤ N levels deep\`); ints are 32-bit. A longer value is refused with 400
\`invalid-argument\` (\`details.path\`, and \`maxLength\`, \`maxItems\` or \`maxDepth\`) before
anything is written.

Deletes are soft where the entity has \`isDeleted\`: the row stays, marked, and can be found with
\`where: { isDeleted: true }\`; otherwise the row goes. Who did it, when and through what is in
the metadata of every event (\`docs/events.md\`).

Visibility (the policy hook): administrators see everything; other users see the projects they are
assigned to (\`projectAssignment\`) and what belongs to them, and the global configuration (the
entities below without a project path). Only administrators write global configuration, projects
and assignments; a row the caller cannot see answers 404 whether it exists or not.

Unique keys (\`findUnique\`, \`findUniqueOrThrow\`, \`update\`, \`delete\`, \`upsert\`, as Prisma's
WhereUniqueInput): \`id\`, every field marked "a unique key" below, and a compound unique as Prisma
names it (\`userId_projectId: { userId, projectId }\`), given as values; other filters may stand
beside them (\`where: { name: 'smoke', isEnabled: true }\`). A unique value is compared exactly, and
names the row not deleted that holds it (deleted rows give their values up), except one unique for
good (a user's e-mail, stored in lower case). No row matching is \`null\` (findUnique), else 404.
`;

function typeOf(f: FieldDef): string {
  const base = f.enum ? f.enum.map((v) => `\`${v}\``).join(' \\| ') : f.type;
  return `${base}${f.list ? '[]' : ''}${f.nullable ? ' (nullable)' : ''}${limitOf(f)}`;
}

/** The limits a written value keeps to (contracts/limits.ts): what the model API refuses past them. */
function limitOf(f: FieldDef): string {
  if (!f.writable) return '';
  const parts: string[] = [];
  if (f.type === 'string' && !f.enum) parts.push(`≤ ${(f.maxLength ?? LIMITS.text).toLocaleString('en-US')} characters${f.list ? ' each' : ''}`);
  if (f.type === 'int') parts.push('32-bit');
  if (f.type === 'json') parts.push(`≤ ${LIMITS.jsonDepth} levels deep`);
  if (f.list) parts.push(`≤ ${LIMITS.items.toLocaleString('en-US')} items`);
  return parts.length > 0 ? `, ${parts.join(', ')}` : '';
}

function notes(name: string, f: FieldDef, entity: EntityDef): string {
  const out: string[] = [];
  if (f.fromActor) out.push('set from the caller');
  else if (!f.writable && Object.values(entity.relations).some((r) => r.scalar === name)) out.push('set through its relation');
  else if (!f.writable) out.push('read-only');
  if (f.requiredOnCreate) out.push('required on create');
  if (CREATE_ONLY_FIELDS[entity.name]?.includes(name)) out.push('set on create only (an update naming it is refused)');
  if (f.default !== undefined) out.push(`default \`${JSON.stringify(f.default)}\``);
  if (f.unique === 'forever') out.push('unique for good (normalised; a deleted row keeps it); a unique key');
  else if (f.unique) out.push('unique (case-insensitive, among rows not deleted); a unique key');
  if (f.holdsSecrets) out.push('values under keys named like credentials (`apiToken`, `password`, …) are secrets: sealed before they enter an event, answered as `{"$secret": "<id>"}`, which written back keeps them (docs/compliance.md, "Secrets")');
  return out.join('; ');
}

function relationKind(entity: EntityDef, r: RelationDef, name: string): string {
  if (r.kind === 'one') return `one \`${r.target}\`${r.requiredOnCreate ? ' (required on create)' : ''}`;
  if (r.through && linkRelations(entity).some(([link]) => link === name)) return `many \`${r.target}\` (many-to-many; write with connect / disconnect / set; events carry \`${linkField(name)}\`)`;
  if (r.through) {
    const inverse = Object.entries(ENTITIES[r.target].relations).find(([, other]) => other.through?.table === r.through!.table)![0];
    return `many \`${r.target}\` (many-to-many; written on the other side, \`${r.target}.${inverse}\`)`;
  }
  if (r.owned) return `many \`${r.target}\` (owned; nested create / delete / deleteMany)`;
  return `many \`${r.target}\``;
}

export function renderDomainDoc(): string {
  const byCategory = new Map<string, EntityDef[]>();
  for (const entity of Object.values(ENTITIES)) byCategory.set(entity.category, [...(byCategory.get(entity.category) ?? []), entity]);
  const sections: string[] = [];
  for (const [category, entities] of byCategory) {
    sections.push(`## ${category}\n`);
    for (const entity of entities) {
      const how = writtenAs(entity);
      const types = OWN_EVENTS[entity.name] ?? Object.values(eventTypesOf(entity));
      const events = how === 'aggregate' ? `; stream \`${streamOf(entity, 1).replace(/1$/, '<id>')}\`, events ${types.map((t) => `\`${t}\``).join(', ')}` : '';
      const writeOnly = Object.entries(WRITE_ONLY_INPUTS[entity.name] ?? {}).map(([name, input]) =>
        `| \`${name}\` (input) | string, ${input.minLength} to ${input.maxLength} characters | ${input.requiredOnCreate ? 'required on create; ' : ''}${input.description} |`);
      sections.push([
        `### ${entity.name}`,
        '',
        `Table \`${entity.table}\`; written as **${how}**${events}; ${entity.name === 'project' ? 'seen by the users assigned to it' : entity.projectPath ? `belongs to a project${entity.projectPath.length ? ` through ${entity.projectPath.map((p) => `\`${p}\``).join(' → ')}` : ''}` : 'global configuration'}${entity.softDeleteField ? '; soft delete' : ''}${entity.uniqueTogether ? `; unique together: ${entity.uniqueTogether.map((f) => `\`${f}\``).join(', ')} (unique key \`${entity.uniqueTogether.join('_')}\`)` : ''}.`,
        '',
        '| Field | Type | Notes |',
        '|---|---|---|',
        ...Object.entries(entity.fields).map(([name, f]) => `| \`${name}\` | ${typeOf(f)} | ${notes(name, f, entity)} |`),
        ...writeOnly,
        '',
        ...(Object.keys(entity.relations).length > 0 ? [
          '| Relation | Kind |',
          '|---|---|',
          ...Object.entries(entity.relations).map(([name, r]) => `| \`${name}\` | ${relationKind(entity, r, name)} |`),
          '',
        ] : []),
      ].join('\n'));
    }
  }
  return `${INTRO}\n${sections.join('\n')}`;
}

if (require.main === module) process.stdout.write(renderDomainDoc());
