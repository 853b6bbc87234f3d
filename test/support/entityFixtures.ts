import type { EntityDef, EntityName, FieldDef } from '../../contracts/entities';

/** A value of the field's type that every rule accepts; `n` keeps unique values apart. */
function sampleValue(name: string, field: FieldDef, n: number): unknown {
  if (field.enum) return field.enum[0];
  if (field.list) return [];
  switch (field.type) {
    case 'string': return name === 'url' ? `https://example.com/${name}-${n}` : `${name}-${n}`;
    case 'int': return 1;
    case 'float': return 1.5;
    case 'boolean': return true;
    case 'datetime': return '2026-06-01T12:00:00.000Z';
    case 'json': return {};
  }
}

/** Relations whose target must be one particular row for the entity's own rules (same run, one field). */
const PARTICULAR: Partial<Record<EntityName, Record<string, EntityName>>> = {
  fieldOption: { caseField: 'caseField' },
  testRunResult: { testRunCase: 'testRunCase', testRun: 'testRun' },
};

/**
 * `data` for a model API create of the entity that passes every rule: its required fields, and
 * its required relations connected to the rows `rowOf` names (undefined when a target has no row
 * yet: create that first). Returns undefined if a required target is missing.
 */
export function sampleCreate(entity: EntityDef, rowOf: (target: EntityName) => number | undefined, n: number): Record<string, unknown> | undefined {
  const data: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(entity.fields)) {
    if (field.requiredOnCreate) data[name] = sampleValue(name, field, n);
  }
  if (entity.name === 'user') data.password = `password-${n}-long`;
  if (entity.name === 'user') data.email = `user-${n}-${Math.random().toString(36).slice(2, 8)}@example.com`;
  const wanted = { ...Object.fromEntries(Object.entries(entity.relations).filter(([, r]) => r.kind === 'one' && r.requiredOnCreate).map(([k, r]) => [k, r.target])), ...PARTICULAR[entity.name] };
  for (const [relation, target] of Object.entries(wanted)) {
    const id = rowOf(target as EntityName);
    if (id === undefined) return undefined;
    data[relation] = { connect: { id } };
  }
  return data;
}

/** `data` for a model API update that changes one plain field (never closing, deleting or deactivating). */
export function sampleUpdate(entity: EntityDef, n: number): Record<string, unknown> {
  const writable = Object.entries(entity.fields).filter(([, f]) => f.writable && !f.list && !f.fromActor);
  const text = writable.find(([name, f]) => f.type === 'string' && !f.enum && !f.unique && name !== 'email');
  if (text) return { [text[0]]: `${text[0]}-${n}` };
  const number = writable.find(([, f]) => f.type === 'int' || f.type === 'float');
  if (number) return { [number[0]]: n };
  const flag = writable.find(([name, f]) => f.type === 'boolean' && !['isCompleted', 'isDeleted', 'isActive'].includes(name));
  if (flag) return { [flag[0]]: n % 2 === 0 };
  return {};
}
