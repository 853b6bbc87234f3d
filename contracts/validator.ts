import fs from 'node:fs';
import path from 'node:path';
import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { ContractViolation } from './contractViolation';
import type { EventEnvelope, NewEvent } from './envelope';
import { eventTypesOf, rowsWrittenOf } from './entityEvents';

type RowsData = Parameters<typeof rowsWrittenOf>[0];

const SCHEMA_FILE = /^([A-Za-z]+)\.v(\d+)\.schema\.json$/;
export const EVENTS_SCHEMA_DIR = path.join(__dirname, 'events');

export interface ContractValidator {
  /** Throws ContractViolation when `data` does not match the schema of `type` at `schemaVersion`. */
  check(event: { type: string; schemaVersion?: number; data: unknown }): void;
  /** Throws ContractViolation unless `value` is a whole envelope whose data matches its contract. */
  checkEnvelope(value: unknown): EventEnvelope;
  latestVersion(type: string): number;
  knownTypes(): string[];
}

/**
 * Loads every `contracts/events/<Type>.v<N>.schema.json` once; each is compiled with ajv when an
 * event of its type and version is first checked (a process meets few of the ~300 versions).
 */
export function loadContracts(dir = EVENTS_SCHEMA_DIR): ContractValidator {
  const ajv = new Ajv({ allErrors: true, strict: true });
  addFormats(ajv);
  const schemas = new Map<string, unknown>();
  const validators = new Map<string, ValidateFunction>();
  const latest = new Map<string, number>();
  for (const file of fs.readdirSync(dir)) {
    const m = SCHEMA_FILE.exec(file);
    if (!m) continue;
    const [, type, v] = m;
    const version = Number(v);
    schemas.set(`${type}.v${version}`, JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')));
    latest.set(type, Math.max(version, latest.get(type) ?? 0));
  }
  const validatorOf = (key: string): ValidateFunction | undefined => {
    let validate = validators.get(key);
    if (validate === undefined && schemas.has(key)) validators.set(key, (validate = ajv.compile(schemas.get(key) as object)));
    return validate;
  };
  const envelope = ajv.compile(JSON.parse(fs.readFileSync(path.join(dir, '..', 'envelope.schema.json'), 'utf8')));
  const check: ContractValidator['check'] = (event) => {
    const version = event.schemaVersion ?? latest.get(event.type);
    const validate = version === undefined ? undefined : validatorOf(`${event.type}.v${version}`);
    if (!validate) throw new ContractViolation(event.type, [{ message: `no schema for ${event.type} v${version}` }]);
    if (!validate(event.data)) throw new ContractViolation(event.type, validate.errors);
    if (event.type === 'ExternalImportRowsWritten' && version! >= 2) checkRows(event.data as RowsData);
  };
  /**
   * An external import's bulk rows (v2 on) are the data of their entity's Created events: each row
   * must be what the newest version of that contract accepts (within its limits), so that the read
   * model can apply it as that event. A new Created version that refuses what the one before took
   * needs a new version of ExternalImportRowsWritten too (rows of older chunks are checked again
   * when a Kafka consumer reads them).
   */
  const checkRows = (data: RowsData) => {
    const written = rowsWrittenOf(data);
    if (written === null) return;
    const type = eventTypesOf(written.entity).created;
    const validate = validatorOf(`${type}.v${latest.get(type)}`)!;
    written.rows.forEach((row, i) => {
      if (validate(row)) return;
      throw new ContractViolation('ExternalImportRowsWritten', (validate.errors ?? []).map((e) => ({ ...e, instancePath: `/rows/${i}${e.instancePath}` })));
    });
  };
  return {
    check,
    checkEnvelope(value) {
      if (!envelope(value)) throw new ContractViolation('EventEnvelope', envelope.errors);
      const e = value as unknown as EventEnvelope;
      check(e);
      return e;
    },
    latestVersion(type) {
      const v = latest.get(type);
      if (v === undefined) throw new ContractViolation(type, [{ message: 'unknown event type' }]);
      return v;
    },
    knownTypes: () => [...latest.keys()].sort(),
  };
}

/** Stamps the schema version and validates every event of an append. */
export function checkAll(validator: ContractValidator, events: NewEvent[]): NewEvent[] {
  return events.map((e) => {
    const withVersion = { ...e, schemaVersion: e.schemaVersion ?? validator.latestVersion(e.type) };
    validator.check(withVersion);
    return withVersion;
  });
}
