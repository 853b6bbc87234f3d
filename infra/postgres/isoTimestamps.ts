import pg from 'pg';

/** PostgreSQL's type id of `timestamp with time zone`. */
const TIMESTAMPTZ = 1184;

/** A timestamptz as PostgreSQL writes it in a session at UTC (DateStyle ISO): `2026-11-30 16:36:00.123456+00`. */
const UTC_TEXT = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?\+00$/;

/**
 * A timestamptz's text as the API answers it (ISO 8601, milliseconds, `Z`), without building a
 * Date: what `new Date(…)` through pg's own parser and `toISOString()` give, for the text of a
 * session at UTC (the fraction cut to milliseconds as that path cuts it); any other text (another
 * zone, BC, infinity) goes that way.
 */
export function isoOfTimestamptz(text: string): string | number | null {
  const match = UTC_TEXT.exec(text);
  if (!match) {
    const parsed = pg.types.getTypeParser(TIMESTAMPTZ, 'text')(text) as Date | number | null;
    return parsed instanceof Date ? (Number.isNaN(parsed.getTime()) ? null : parsed.toISOString()) : parsed;
  }
  // As postgres-date does: 1000 × the fraction, truncated by Date.UTC.
  const ms = match[3] === undefined ? 0 : Math.trunc(1000 * parseFloat(`0.${match[3]}`));
  return `${match[1]}T${match[2]}.${String(ms).padStart(3, '0')}Z`;
}

/**
 * pg's parsers with timestamptz as ISO text (`isoOfTimestamptz`), for reads whose rows only go
 * out as JSON (the model API's): a third of the time of a Date per value, built and formatted
 * again (bench/README.md, model API under load).
 * Given as a query's `types` (pg's per-query type parsers); every other type as pg parses it.
 */
export const ISO_TIMESTAMP_TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === TIMESTAMPTZ && format !== 'binary') return isoOfTimestamptz;
    return pg.types.getTypeParser(oid, format as 'text');
  },
};

