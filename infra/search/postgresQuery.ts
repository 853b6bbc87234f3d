import type { Clause, DateField, KeywordField, SortKey, TextField } from '../../services/shared/search';

/**
 * Translation of the port's Clause tree into PostgreSQL: every value a bound parameter, every
 * identifier from the fixed maps below. Fragments carry placeholder tokens (`:$bind<n>$:`, in our own SQL text only) that `Sql.finish`
 * turns into knex's `?` in the order they appear in the final text (a fragment may be used twice:
 * its values are bound twice).
 */
export class Sql {
  private readonly values: unknown[] = [];

  bind(value: unknown): string {
    this.values.push(value);
    return `:$bind${this.values.length - 1}$:`;
  }

  finish(text: string): { sql: string; bindings: unknown[] } {
    const bindings: unknown[] = [];
    const sql = text.replace(/:\$bind(\d+)\$:/g, (_, i: string) => {
      bindings.push(this.values[Number(i)]);
      return '?';
    });
    if (sql.includes('??')) throw new Error('a search query must not contain "??"');
    return { sql, bindings };
  }
}

/** The text search configuration: English stop words and snowball stems. */
export const CONFIG = `'english'::regconfig`;

/**
 * A dotted or slashed name (`java.lang.NullPointerException`, `src/main/Login.java`) is one token
 * to PostgreSQL's parser; a separator character after each `.`, `/` or `\` next to a letter (before
 * or after it, as OpenSearch's char filter: `Cache$2.refresh` splits, `2.4` stays whole) splits it
 * into words that read the same (applied to documents, queries and highlights alike; highlights
 * remove it again). The separator is ASCII
 * (unit separator, chr(31)): the parser's character classes follow the database's LC_CTYPE, and
 * under `C` (the embedded server's) every non-ASCII character is a letter, so a zero-width space
 * would have joined the next word instead of ending this one.
 */
export const NAME_SEPARATOR = 'chr(31)';
export function normalised(expr: string): string {
  // No lookaround (knex reads `?` as a binding): first after a letter, then before one where not already split.
  const afterLetter = `regexp_replace(${expr}, '([[:alpha:]][./\\\\])', '\\1' || ${NAME_SEPARATOR}, 'g')`;
  return `regexp_replace(${afterLetter}, '([./\\\\])([[:alpha:]])', '\\1' || ${NAME_SEPARATOR} || '\\2', 'g')`;
}

/**
 * Text as the parser reads it, for documents, queries and highlights alike: dotted names split
 * (above), and HTML-escaped — so that markup in the text is words like any other (PostgreSQL's
 * parser would take `<script>` as a tag and skip what follows it) and a highlight is safe HTML.
 */
export function analysed(expr: string): string {
  return htmlEscaped(normalised(expr));
}

/** Escapes text as HTML inside SQL (before ts_headline adds its marks). */
export function htmlEscaped(expr: string): string {
  return `replace(replace(replace(replace(replace(${expr}, '&', '&amp;'), '<', '&lt;'), '>', '&gt;'), '"', '&quot;'), '''', '&#39;')`;
}

export const TSV_COLUMN: Record<TextField, string> = {
  title: 'title_tsv', description: 'description_tsv', content: 'content_tsv', 'customFields.value': 'custom_tsv',
};

/** Keyword fields: the column, and whether it holds an array. */
export const KEYWORD_COLUMN: Record<KeywordField, { column: string; array: boolean }> = {
  id: { column: 'id', array: false },
  type: { column: 'type', array: false },
  projectId: { column: 'project_id', array: false },
  'title.keyword': { column: 'title', array: false },
  tags: { column: 'tags', array: true },
  folder: { column: 'folder', array: false },
  template: { column: 'template', array: false },
  state: { column: 'state', array: false },
  status: { column: 'status', array: false },
  creator: { column: 'creator', array: false },
  configuration: { column: 'configuration', array: false },
  branch: { column: 'branch', array: false },
  failureType: { column: 'failure_type', array: false },
  project: { column: 'project', array: false },
  runId: { column: 'run_id', array: false },
  caseId: { column: 'case_id', array: false },
  'customFields.name': { column: 'custom_names', array: true },
};

export const DATE_COLUMN: Record<DateField, string> = { createdAt: 'created_at', updatedAt: 'updated_at', executedAt: 'executed_at' };

const isTextField = (field: string): field is TextField => field in TSV_COLUMN;

/** At most this many words of a query are looked up (the rest are ignored). */
const MAX_WORDS = 64;

/** A LIKE pattern matching `value` literally at the start. */
export function likePrefix(value: string): string {
  return `${value.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

export interface Translated {
  /** A boolean expression, never null. */
  where: string;
  /** The score this clause adds (a float8 expression), or null when it does not score. */
  score: string | null;
}

/**
 * Translates clauses over a row alias `d`. `queries` collects the tsquery expressions of the
 * positive text clauses (for highlighting).
 */
export class ClauseTranslator {
  readonly queries: string[] = [];

  constructor(private readonly sql: Sql, private readonly row = 'd') {}

  translate(clause: Clause, positive = true): Translated {
    switch (clause.kind) {
      case 'all': return { where: 'true', score: null };
      case 'text': return this.text(clause, positive);
      case 'terms': {
        const { column, array } = KEYWORD_COLUMN[clause.field];
        const values = this.sql.bind(clause.values);
        const where = array ? `${this.row}.${column} && ${values}::text[]` : `${this.row}.${column} = ANY(${values}::text[])`;
        return { where: `coalesce(${where}, false)`, score: null };
      }
      case 'range': {
        const column = `${this.row}.${DATE_COLUMN[clause.field]}`;
        const bounds = ([['gte', '>='], ['gt', '>'], ['lte', '<='], ['lt', '<']] as const)
          .filter(([k]) => clause[k] !== undefined)
          .map(([k, op]) => `${column} ${op} ${this.sql.bind(clause[k])}::timestamptz`);
        return { where: `coalesce(${bounds.length ? bounds.join(' AND ') : `${column} IS NOT NULL`}, false)`, score: null };
      }
      case 'prefix': {
        if (isTextField(clause.field)) {
          const lexeme = `'${clause.value.toLowerCase().replace(/\\/g, '\\\\').replace(/'/g, "''")}':*`;
          const q = `to_tsquery(${CONFIG}, ${this.sql.bind(lexeme)})`;
          if (positive) this.queries.push(q);
          return { where: `coalesce(${this.row}.${TSV_COLUMN[clause.field]} @@ ${q}, false)`, score: null };
        }
        const { column, array } = KEYWORD_COLUMN[clause.field];
        const pattern = this.sql.bind(likePrefix(clause.value));
        const where = array
          ? `EXISTS (SELECT 1 FROM unnest(${this.row}.${column}) AS v(value) WHERE v.value LIKE ${pattern} ESCAPE '\\')`
          : `${this.row}.${column} LIKE ${pattern} ESCAPE '\\'`;
        return { where: `coalesce(${where}, false)`, score: null };
      }
      case 'bool': return this.bool(clause, positive);
      default: {
        const never: never = clause;
        throw new Error(`unknown clause ${JSON.stringify(never)}`);
      }
    }
  }

  private text(clause: Extract<Clause, { kind: 'text' }>, positive: boolean): Translated {
    if (clause.fields.length === 0 || clause.query.trim() === '') return { where: 'false', score: null };
    let q: string;
    if (clause.phrase) q = `phraseto_tsquery(${CONFIG}, ${analysed(`${this.sql.bind(clause.query)}::text`)})`;
    else if (clause.operator === 'and') q = `plainto_tsquery(${CONFIG}, ${analysed(`${this.sql.bind(clause.query)}::text`)})`;
    else {
      const words = clause.query.split(/\s+/).filter((w) => w !== '').slice(0, MAX_WORDS);
      q = `(${words.map((w) => `plainto_tsquery(${CONFIG}, ${analysed(`${this.sql.bind(w)}::text`)})`).join(' || ')})`;
    }
    if (positive) this.queries.push(q);
    const matches = clause.fields.map((f) => `${this.row}.${TSV_COLUMN[f.field]} @@ ${q}`);
    const score = clause.fields.map((f) => {
      const column = `${this.row}.${TSV_COLUMN[f.field]}`;
      return `${this.sql.bind(f.boost)}::float8 * CASE WHEN ${column} @@ ${q} THEN ts_rank(${column}, ${q}, 1) ELSE 0 END`;
    }).join(' + ');
    return { where: `coalesce(${matches.join(' OR ')}, false)`, score: `(${score})` };
  }

  private bool(clause: Extract<Clause, { kind: 'bool' }>, positive: boolean): Translated {
    const must = clause.must.map((c) => this.translate(c, positive));
    const filter = clause.filter.map((c) => this.translate(c, positive));
    const should = clause.should.map((c) => this.translate(c, positive));
    const mustNot = clause.mustNot.map((c) => this.translate(c, !positive));
    const wheres = [...must, ...filter].map((t) => t.where);
    wheres.push(...mustNot.map((t) => `NOT ${t.where}`));
    const minimum = clause.minimumShouldMatch ?? (must.length === 0 && filter.length === 0 ? 1 : 0);
    if (should.length > 0 && minimum > 0) {
      wheres.push(minimum === 1
        ? `(${should.map((t) => t.where).join(' OR ')})`
        : `(${should.map((t) => `(CASE WHEN ${t.where} THEN 1 ELSE 0 END)`).join(' + ')}) >= ${this.sql.bind(minimum)}::int`);
    }
    const scores = [
      ...must.map((t) => t.score).filter((s): s is string => s !== null),
      ...should.filter((t) => t.score !== null).map((t) => `CASE WHEN ${t.where} THEN ${t.score} ELSE 0 END`),
    ];
    return { where: wheres.length ? `(${wheres.join(' AND ')})` : 'true', score: scores.length ? `(${scores.join(' + ')})` : null };
  }
}

/** ORDER BY items for the sort keys (missing values last, keywords in byte order), then a stable tiebreak. */
export function orderBy(sort: readonly SortKey[], score: string, row = 'd'): { expr: string; order: 'asc' | 'desc' }[] {
  const keys = sort.length ? sort : [{ field: '_score', order: 'desc' } as const];
  const items = keys.map((k) => {
    if (k.field === '_score') return { expr: score, order: k.order };
    if (k.field in DATE_COLUMN) return { expr: `${row}.${DATE_COLUMN[k.field as DateField]}`, order: k.order };
    const { column, array } = KEYWORD_COLUMN[k.field as KeywordField];
    const expr = array
      ? `(SELECT ${k.order === 'asc' ? 'min' : 'max'}(v.value COLLATE "C") FROM unnest(${row}.${column}) AS v(value))`
      : `${row}.${column} COLLATE "C"`;
    return { expr, order: k.order };
  });
  return [...items, { expr: `${row}.type COLLATE "C"`, order: 'asc' }, { expr: `${row}.id COLLATE "C"`, order: 'asc' }];
}
