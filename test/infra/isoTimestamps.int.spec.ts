import { expect } from 'chai';
import pg from 'pg';
import { ISO_TIMESTAMP_TYPES, isoOfTimestamptz } from '../../infra/postgres/isoTimestamps';
import { ADMIN_URL } from '../support/database';

/** What the API answered before: pg's own parser (a Date), then toISOString(). */
const viaDate = (text: string) => {
  const parsed = pg.types.getTypeParser(1184, 'text')(text) as Date | number | null;
  return parsed instanceof Date ? parsed.toISOString() : parsed;
};

/**
 * Timestamps as ISO text for the model API's reads (infra/postgres/isoTimestamps.ts): the same
 * text the Date path gave, for what PostgreSQL writes (every fraction length, zones other than
 * UTC, infinity), read through a real server.
 */
describe('timestamptz as ISO text, as the Date path gave it', function () {
  this.timeout(30_000);

  it('answers what pg\'s parser and toISOString() answer, fraction by fraction (cut to milliseconds as that path cuts)', () => {
    const texts: string[] = ['2026-11-30 16:36:00+00', '1999-12-31 23:59:59+00', '0999-01-01 00:00:00+00', '2026-02-28 01:02:03.1+00'];
    for (let ms = 0; ms < 1000; ms++) texts.push(`2026-11-30 16:36:00.${String(ms).padStart(3, '0')}+00`);
    for (let i = 0; i < 2000; i++) texts.push(`2026-11-30 16:36:00.${String((i * 7919) % 1_000_000).padStart(6, '0').replace(/0+$/, '') || '0'}+00`);
    for (const text of texts) expect(isoOfTimestamptz(text), text).to.equal(viaDate(text));
  });

  it('takes the Date path for text it does not know: another zone, BC, infinity', () => {
    for (const text of ['2026-11-30 17:36:00.5+01', '2026-11-30 12:06:00-04:30', '0044-03-15 12:00:00+00 BC', 'infinity', '-infinity']) {
      expect(isoOfTimestamptz(text), text).to.deep.equal(viaDate(text));
    }
  });

  it('reads a real server\'s timestamps, in UTC and in another zone, as the Date path does; other types as pg parses them', async () => {
    const client = new pg.Client({ connectionString: ADMIN_URL });
    await client.connect();
    try {
      const sql = `SELECT t, t::date AS d, 42::int AS n, ARRAY[t] AS a FROM (VALUES ('2026-11-30 16:36:00.987654+00'::timestamptz), ('2026-01-01 00:00:00+00'::timestamptz), ('2026-11-30 16:36:00.123456+00'::timestamptz), (NULL::timestamptz)) AS v(t)`;
      for (const zone of ['UTC', 'Asia/Kolkata']) {
        await client.query(`SET TimeZone = '${zone}'`);
        const plain = (await client.query(sql)).rows;
        const iso = (await client.query({ text: sql, types: ISO_TIMESTAMP_TYPES })).rows;
        expect(iso.map((r) => r.t), zone).to.deep.equal(plain.map((r) => (r.t === null ? null : (r.t as Date).toISOString())));
        expect(iso.map((r) => [r.d, r.n, r.a]), zone).to.deep.equal(plain.map((r) => [r.d, r.n, r.a]));
      }
    } finally {
      await client.end();
    }
  });
});
