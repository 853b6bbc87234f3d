import type { EntityDef, FieldDef, ScalarType } from '../../../contracts/entities';

/**
 * A Prisma schema for the read model, generated from the entity catalogue, so that Prisma Client
 * can query the very tables the model API reads (tests and benchmarks only; the tables are still
 * created by projections/migrations, Prisma never migrates anything).
 *
 * - one model per entity (`@@map(table)`), fields `@map(column)`, `@db.Timestamptz` for datetimes;
 *   enum strings stay `String`, scalar lists become `T[]`;
 * - every relation gets an explicit name and both sides: a side the catalogue lacks is added
 *   under a name starting with `hidden_` (never part of a compared result);
 * - a many-to-many relation (`through`) becomes a list of an explicit join model (composite
 *   `@@id`) whose relation fields are named by `linkRelationName`; a client reaches the target
 *   through it (`tags: { some: { tag: {...} } }`), see the translation in the differential test.
 */

export type Catalogue = Readonly<Record<string, EntityDef>>;

const SCALARS: Record<ScalarType, string> = {
  int: 'Int',
  float: 'Float',
  string: 'String',
  boolean: 'Boolean',
  datetime: 'DateTime',
  json: 'Json',
};

export const modelName = (entity: string): string => entity[0].toUpperCase() + entity.slice(1);

const camel = (column: string): string => column.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** A join table's model: `repository_case_tags` → `RepositoryCaseTagsLink`. */
export const linkModelName = (table: string): string => `${modelName(camel(table))}Link`;

/** The join model's relation field for one key column: `repository_case_id` → `repositoryCase`. */
export const linkRelationName = (column: string): string => camel(column.replace(/_id$/, ''));

const linkScalarName = (column: string): string => camel(column);

interface Line {
  name: string;
  text: string;
}

interface Model {
  name: string;
  table: string;
  lines: Line[];
  footer: string[];
}

export interface PrismaSchemaOptions {
  /** Directory the client is generated into (generator `output`). */
  output: string;
}

/** The schema text; throws when the catalogue cannot be expressed (e.g. a relation to an unknown entity). */
export function prismaSchema(catalogue: Catalogue, options: PrismaSchemaOptions): string {
  const models = new Map<string, Model>();
  for (const entity of Object.values(catalogue)) {
    const together = entity.uniqueTogether ? [`@@unique([${entity.uniqueTogether.join(', ')}])`] : [];
    models.set(entity.name, { name: modelName(entity.name), table: entity.table, lines: [], footer: [...together, `@@map(${q(entity.table)})`] });
  }
  const modelOf = (entity: string): Model => {
    const model = models.get(entity);
    if (!model) throw new Error(`the catalogue relates to "${entity}", which is not in it`);
    return model;
  };
  const add = (model: Model, name: string, text: string) => {
    if (model.lines.some((line) => line.name === name)) throw new Error(`${model.name}.${name} would be declared twice`);
    model.lines.push({ name, text });
  };

  for (const entity of Object.values(catalogue)) {
    const model = modelOf(entity.name);
    for (const [name, field] of Object.entries(entity.fields)) add(model, name, scalarLine(name, field));
  }

  /** The scalar field of `entity` that holds `column`, declared (as a nullable Int) if the catalogue has none. */
  const scalarFor = (entity: EntityDef, column: string): { name: string; nullable: boolean } => {
    const existing = Object.entries(entity.fields).find(([, field]) => field.column === column);
    if (existing) return { name: existing[0], nullable: existing[1].nullable };
    const name = `hidden_${camel(column)}`;
    const model = modelOf(entity.name);
    if (!model.lines.some((line) => line.name === name)) add(model, name, `${name} Int? @map(${q(column)})`);
    return { name, nullable: true };
  };

  // to-one / to-many pairs, keyed by the foreign key: `${owner}.${column}` where owner holds the column.
  const pairs = new Map<string, { owner: EntityDef; column: string; target: EntityDef; one?: string; many?: string }>();
  const pairOf = (owner: EntityDef, column: string, target: EntityDef) => {
    const key = `${owner.name}.${column}->${target.name}`;
    let pair = pairs.get(key);
    if (!pair) pairs.set(key, (pair = { owner, column, target }));
    return pair;
  };
  // join tables: table → key column → the entity it points at
  const links = new Map<string, Map<string, { entity: EntityDef; field?: string }>>();
  const linkColumn = (table: string, column: string, entity: EntityDef) => {
    let columns = links.get(table);
    if (!columns) links.set(table, (columns = new Map()));
    const existing = columns.get(column);
    if (existing && existing.entity.name !== entity.name) throw new Error(`${table}.${column} points at both ${existing.entity.name} and ${entity.name}`);
    if (!existing) columns.set(column, { entity });
    return columns.get(column)!;
  };

  for (const entity of Object.values(catalogue)) {
    for (const [name, relation] of Object.entries(entity.relations)) {
      const target = catalogue[relation.target];
      if (!target) throw new Error(`${entity.name}.${name} relates to "${relation.target}", which is not in the catalogue`);
      if (relation.through) {
        const { table, sourceKey, targetKey } = relation.through;
        const source = linkColumn(table, sourceKey, entity);
        linkColumn(table, targetKey, target);
        if (source.field) throw new Error(`${entity.name}.${name} and .${source.field} both follow ${table}.${sourceKey}`);
        source.field = name;
      } else if (relation.kind === 'one') {
        const pair = pairOf(entity, relation.foreignKey, target);
        if (pair.one) throw new Error(`${entity.name}.${name} and .${pair.one} share the foreign key ${relation.foreignKey}`);
        pair.one = name;
      } else {
        const pair = pairOf(target, relation.foreignKey, entity);
        if (pair.many) throw new Error(`${entity.name}.${name} and .${pair.many} are both the list side of ${target.name}.${relation.foreignKey}`);
        pair.many = name;
      }
    }
  }

  for (const pair of pairs.values()) {
    const relationName = q(`${pair.owner.name}_${pair.column}`);
    const scalar = pair.one ? scalarFor(pair.owner, pair.owner.relations[pair.one].foreignKey) : scalarFor(pair.owner, pair.column);
    const oneName = pair.one ?? `hidden_${pair.target.name}Via${modelName(camel(pair.column))}`;
    const manyName = pair.many ?? `hidden_${pair.owner.name}Via${modelName(camel(pair.column))}`;
    add(modelOf(pair.owner.name), oneName,
      `${oneName} ${modelName(pair.target.name)}${scalar.nullable ? '?' : ''} @relation(${relationName}, fields: [${scalar.name}], references: [id])`);
    add(modelOf(pair.target.name), manyName, `${manyName} ${modelName(pair.owner.name)}[] @relation(${relationName})`);
  }

  const linkModels: Model[] = [];
  for (const [table, columns] of links) {
    if (columns.size !== 2) throw new Error(`join table ${table} must link exactly two key columns, has ${[...columns.keys()].join(', ')}`);
    const link: Model = { name: linkModelName(table), table, lines: [], footer: [] };
    for (const [column, { entity, field }] of columns) {
      const relationName = q(`${table}_${column}`);
      add(link, linkScalarName(column), `${linkScalarName(column)} Int @map(${q(column)})`);
      add(link, linkRelationName(column), `${linkRelationName(column)} ${modelName(entity.name)} @relation(${relationName}, fields: [${linkScalarName(column)}], references: [id])`);
      const back = field ?? `hidden_${camel(table)}Via${modelName(camel(column))}`;
      add(modelOf(entity.name), back, `${back} ${link.name}[] @relation(${relationName})`);
    }
    link.footer.push(`@@id([${[...columns.keys()].map(linkScalarName).join(', ')}])`, `@@map(${q(table)})`);
    linkModels.push(link);
  }

  const header = [
    '// Generated from contracts/entities.ts by test/model/prisma/schema.ts: do not edit.',
    'generator client {',
    '  provider     = "prisma-client"',
    `  output       = ${q(options.output)}`,
    '  moduleFormat = "cjs"',
    '  runtime      = "nodejs"',
    '}',
    '',
    'datasource db {',
    '  provider = "postgresql"',
    '}',
  ];
  return [...header, ...[...models.values(), ...linkModels].map(render)].join('\n') + '\n';
}

function scalarLine(name: string, field: FieldDef): string {
  let type = SCALARS[field.type];
  if (field.list) type += '[]';
  else if (field.nullable) type += '?';
  const attributes: string[] = [];
  if (name === 'id') attributes.push('@id');
  if (field.unique) attributes.push('@unique');
  if (field.column !== name) attributes.push(`@map(${q(field.column)})`);
  if (field.type === 'datetime') attributes.push('@db.Timestamptz');
  return [name, type, ...attributes].join(' ');
}

function render(model: Model): string {
  const width = Math.max(...model.lines.map((line) => line.name.length));
  const lines = model.lines.map((line) => `  ${line.name.padEnd(width)} ${line.text.slice(line.name.length + 1)}`);
  return ['', `model ${model.name} {`, ...lines, '', ...model.footer.map((line) => `  ${line}`), '}'].join('\n');
}

const q = (text: string): string => JSON.stringify(text);
