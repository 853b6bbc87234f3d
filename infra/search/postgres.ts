import type { Knex } from 'knex';
import {
  BulkWriteFailed, IndexNotFound, MAINTENANCE_TIMEOUT_MS, MappingNeedsReindex, OperationNotSupported, SEARCH_TYPES, SearchUnavailable, isSearchType,
  type ClusterHealth, type CreatedIndices, type DocumentKey, type DocumentWrites, type EngineInfo, type FacetRequest, type IndexStats, type KeywordField,
  type MaintenanceResult, type NodeStats, type SearchDocument, type SearchEngine, type SearchHit, type SearchRequest, type SearchResult,
  type SearchSettings, type SearchType, type TextField, type WriteFailure,
} from '../../services/shared/search';
import { CONFIG, ClauseTranslator, KEYWORD_COLUMN, NAME_SEPARATOR, Sql, TSV_COLUMN, analysed, orderBy } from './postgresQuery';

/**
 * PostgreSQL full-text search in the service's own database (the embedded default: nothing else
 * to run). Layout, all names under the configured prefix:
 * - `<prefix>search_v<N>`: the documents of version N, every type (primary key type, id): the
 *   document whole as jsonb, the columns filters, sorts and facets read, and one weighted tsvector
 *   per text field (title A, description B, content C, custom field values D; English stems and
 *   stop words), each with a GIN index, so that a text clause scores per field:
 *   Σ boost × ts_rank(field, query);
 * - `<prefix>search`: a view over the live version's table — the alias. `switchAlias` replaces it
 *   and the live flag in one transaction, so a search reads one version or the other, never both;
 * - `<prefix>search_versions`: the versions that exist and which one is live;
 * - `<prefix>search_checkpoints`: the indexer's positions per version, written in the
 *   transaction of the documents they cover.
 * The stats name each (type, version) `<prefix><type>_v<N>`, as the other engines' indices.
 */
export class PostgresSearchEngine implements SearchEngine {
  readonly engine = 'postgres' as const;
  private readonly prefix: string;

  constructor(private readonly knex: Knex, private readonly settings: SearchSettings) {
    if (!/^[a-z0-9_]{0,40}$/.test(settings.indexPrefix)) {
      throw new Error(`search index prefix ${JSON.stringify(settings.indexPrefix)}: PostgreSQL search takes lowercase letters, digits and _ only (at most 40)`);
    }
    this.prefix = settings.indexPrefix;
  }

  aliasOf(type: SearchType): string {
    return `${this.prefix}${type}`;
  }

  private table(version: number): string {
    return `"${this.prefix}search_v${checkedVersion(version)}"`;
  }

  private get view() { return `"${this.prefix}search"`; }
  private get versionsTable() { return `"${this.prefix}search_versions"`; }
  private get checkpointsTable() { return `"${this.prefix}search_checkpoints"`; }

  async info(): Promise<EngineInfo> {
    const { rows } = await this.guard(() => this.knex.raw<{ rows: { v: string }[] }>('SELECT current_setting(\'server_version\') AS v'));
    return { engine: 'postgres', version: rows[0].v };
  }

  async ensureVersion(version: number): Promise<void> {
    const table = this.table(version);
    const name = (suffix: string) => `"${this.prefix}search_v${version}_${suffix}"`;
    await this.tx(async (trx) => {
      await this.lock(trx);
      await trx.raw(`CREATE TABLE IF NOT EXISTS ${this.versionsTable} (version int PRIMARY KEY, live boolean NOT NULL DEFAULT false, created_at timestamptz NOT NULL DEFAULT now())`);
      await trx.raw(`CREATE TABLE IF NOT EXISTS ${this.checkpointsTable} (version int NOT NULL, key text NOT NULL, position text NOT NULL, PRIMARY KEY (version, key))`);
      const columns = DOCUMENT_COLUMNS.map(([column, type, notNull]) => `${column} ${type}${notNull ? ' NOT NULL' : ''}`);
      await trx.raw(`CREATE TABLE IF NOT EXISTS ${table} (${columns.join(', ')}, PRIMARY KEY (type, id))`);
      for (const column of Object.values(TSV_COLUMN)) {
        await trx.raw(`CREATE INDEX IF NOT EXISTS ${name(column)} ON ${table} USING gin (${column})`);
      }
      await trx.raw(`CREATE INDEX IF NOT EXISTS ${name('tags')} ON ${table} USING gin (tags)`);
      await trx.raw(`CREATE INDEX IF NOT EXISTS ${name('project')} ON ${table} (project_id, type)`);
      await trx.raw(`INSERT INTO ${this.versionsTable} (version) VALUES (?) ON CONFLICT DO NOTHING`, [version]);
    });
  }

  async liveVersion(): Promise<number | null> {
    const rows = await this.rowsOrNone<{ version: number }>(`SELECT version FROM ${this.versionsTable} WHERE live`);
    return rows[0]?.version ?? null;
  }

  async versions(): Promise<number[]> {
    const rows = await this.rowsOrNone<{ version: number }>(`SELECT version FROM ${this.versionsTable} ORDER BY version`);
    return rows.map((r) => r.version);
  }

  async switchAlias(version: number): Promise<void> {
    const table = this.table(version);
    await this.tx(async (trx) => {
      await this.lock(trx);
      const { rows } = await trx.raw<{ rows: unknown[] }>(`UPDATE ${this.versionsTable} SET live = (version = ?) RETURNING version`, [version]);
      const { rows: exists } = await trx.raw<{ rows: unknown[] }>(`SELECT 1 FROM ${this.versionsTable} WHERE version = ?`, [version]);
      if (rows.length === 0 || exists.length === 0) throw new Error(`search version ${version} does not exist`);
      await trx.raw(`DROP VIEW IF EXISTS ${this.view}`);
      await trx.raw(`CREATE VIEW ${this.view} AS SELECT * FROM ${table}`);
    });
  }

  async dropVersion(version: number): Promise<void> {
    const table = this.table(version);
    await this.tx(async (trx) => {
      await this.lock(trx);
      const { rows } = await trx.raw<{ rows: { live: boolean }[] }>(`SELECT live FROM ${this.versionsTable} WHERE version = ?`, [version]);
      if (rows[0]?.live) throw new Error(`search version ${version} is live: switch the alias to another version first`);
      await trx.raw(`DROP TABLE IF EXISTS ${table}`);
      await trx.raw(`DELETE FROM ${this.checkpointsTable} WHERE version = ?`, [version]);
      await trx.raw(`DELETE FROM ${this.versionsTable} WHERE version = ?`, [version]);
    });
  }

  /** `ops.readAt` is not needed here: a write is one transaction, sent once, applied in the order the writes are made. */
  async write(version: number, ops: DocumentWrites, checkpoints: Readonly<Record<string, string>> = {}): Promise<void> {
    const table = this.table(version);
    const failures = ops.upsert.map(refusal).filter((f): f is WriteFailure => f !== null);
    if (failures.length) throw new BulkWriteFailed(failures);
    // The last write of a document in one call wins (one row may be touched once per statement).
    const byKey = new Map(ops.upsert.map((d) => [`${d.type}\u0000${d.id}`, d]));
    const docs = [...byKey.values()];
    const size = Math.max(1, this.settings.bulkSize);
    const chunks: SearchDocument[][] = [];
    for (let i = 0; i < docs.length; i += size) chunks.push(docs.slice(i, i + size));
    const removals: DocumentKey[][] = [];
    for (let i = 0; i < ops.remove.length; i += size) removals.push(ops.remove.slice(i, i + size));
    const keys = Object.keys(checkpoints);
    await this.tx(async (trx) => {
      for (const chunk of chunks) await trx.raw(upsertSql(table), [jsonWithoutNul(chunk)]);
      for (const chunk of removals) {
        await trx.raw(`DELETE FROM ${table} AS d USING unnest(?::text[], ?::text[]) AS k(type, id) WHERE d.type = k.type AND d.id = k.id`,
          [chunk.map((k) => k.type), chunk.map((k) => k.id)]);
      }
      if (keys.length) {
        // Forward only, as on the document engines (positions and offsets are decimal integers).
        await trx.raw(`INSERT INTO ${this.checkpointsTable} AS t (version, key, position) SELECT ?, k, p FROM unnest(?::text[], ?::text[]) AS c(k, p)
          ON CONFLICT (version, key) DO UPDATE SET position = EXCLUDED.position WHERE EXCLUDED.position::numeric > t.position::numeric`,
        [version, keys, keys.map((k) => checkpoints[k])]);
      }
    }, chunks.length + removals.length + 2);
  }

  async readCheckpoints(version: number): Promise<Record<string, string>> {
    const rows = await this.rowsOrNone<{ key: string; position: string }>(`SELECT key, position FROM ${this.checkpointsTable} WHERE version = ?`, [checkedVersion(version)]);
    return Object.fromEntries(rows.map((r) => [r.key, r.position]));
  }

  async refresh(): Promise<void> {
    // A committed row is visible to the next query.
  }

  async search(request: SearchRequest): Promise<SearchResult> {
    const started = performance.now();
    const sql = new Sql();
    const translator = new ClauseTranslator(sql);
    const query = translator.translate(request.query);
    const filters = request.filter.map((c) => translator.translate(c, false).where);
    const where = [`d.type = ANY(${sql.bind(request.types)}::text[])`, query.where, ...filters].join(' AND ');
    const score = query.score ?? '0::float8';
    const order = orderBy(request.sort, 's_score');
    const withScore = request.sort.length === 0 || request.sort.some((k) => k.field === '_score');
    const sortColumns = order.map((o, i) => `${o.expr} AS s${i}`);
    const tsvColumns = [...new Set(request.highlight.map((f) => `d.${TSV_COLUMN[f]}`))];
    const outerOrder = order.map((o, i) => `p.s${i} ${o.order === 'asc' ? 'ASC' : 'DESC'} NULLS LAST`).join(', ');
    const highlightQuery = translator.queries.length ? `(${translator.queries.join(' || ')})` : null;
    const highlights = request.highlight.map((field) => `${highlightSql(field, highlightQuery)} AS h_${field.replace('.', '_')}`);
    const text = `
      WITH m AS (SELECT d.*, ${score} AS s_score FROM ${this.view} AS d WHERE ${where}),
           p AS (SELECT d.type, d.id, d.project_id, d.document, d.s_score, ${[...sortColumns, ...tsvColumns].join(', ')}, count(*) OVER () AS total
                   FROM m AS d ORDER BY ${order.map((o, i) => `s${i} ${o.order === 'asc' ? 'ASC' : 'DESC'} NULLS LAST`).join(', ')}
                   LIMIT ${sql.bind(request.size)}::int OFFSET ${sql.bind(request.from)}::int)
      SELECT p.type, p.id, p.project_id, p.document, p.s_score, p.total${highlights.length ? ', ' : ''}${highlights.join(', ')}
        FROM p
       ORDER BY ${outerOrder}`;
    const { sql: statement, bindings } = sql.finish(text);
    const rows = await this.liveRows<Record<string, unknown>>(statement, bindings);
    let total = rows.length ? Number(rows[0].total) : 0;
    if (rows.length === 0 && request.from > 0) {
      const countSql = new Sql();
      const t = new ClauseTranslator(countSql);
      const w = [`d.type = ANY(${countSql.bind(request.types)}::text[])`, t.translate(request.query).where, ...request.filter.map((c) => t.translate(c, false).where)].join(' AND ');
      const counted = countSql.finish(`SELECT count(*) AS n FROM ${this.view} AS d WHERE ${w}`);
      total = Number((await this.liveRows<{ n: string }>(counted.sql, counted.bindings))[0]?.n ?? 0);
    }
    const hits: SearchHit[] = rows.map((r) => {
      const highlight: Partial<Record<TextField, string[]>> = {};
      for (const field of request.highlight) {
        const value = r[`h_${field.replace('.', '_')}`] as string[] | null;
        if (value && value.length) highlight[field] = value;
      }
      return {
        type: r.type as SearchType, id: r.id as string, projectId: r.project_id as string,
        score: withScore ? Number(r.s_score) : null, highlight, document: r.document as SearchDocument,
      };
    });
    return { total, tookMs: Math.round(performance.now() - started), hits };
  }

  async facets(request: FacetRequest): Promise<Record<string, Record<string, number>>> {
    const result: Record<string, Record<string, number>> = Object.fromEntries(request.fields.map((f) => [f, {}]));
    if (request.fields.length === 0) return result;
    const sql = new Sql();
    const translator = new ClauseTranslator(sql);
    const where = [`d.type = ANY(${sql.bind(request.types)}::text[])`, translator.translate(request.query).where, ...request.filter.map((c) => translator.translate(c, false).where)].join(' AND ');
    const fields = [...new Set(request.fields)] as KeywordField[];
    const columns = [...new Set(fields.map((f) => KEYWORD_COLUMN[f].column))];
    const size = sql.bind(request.size);
    const parts = fields.map((f) => {
      const { column, array } = KEYWORD_COLUMN[f];
      const labels = array
        ? `SELECT x.label FROM m CROSS JOIN LATERAL (SELECT DISTINCT v.value AS label FROM unnest(m.${column}) AS v(value) WHERE v.value IS NOT NULL) AS x`
        : `SELECT m.${column} AS label FROM m WHERE m.${column} IS NOT NULL`;
      return `(SELECT ${sql.bind(f)}::text AS field, l.label, count(*) AS n FROM (${labels}) AS l GROUP BY l.label ORDER BY n DESC, l.label COLLATE "C" LIMIT ${size}::int)`;
    });
    const { sql: statement, bindings } = sql.finish(`WITH m AS MATERIALIZED (SELECT ${columns.map((c) => `d.${c}`).join(', ')} FROM ${this.view} AS d WHERE ${where})
      ${parts.join(' UNION ALL ')}`);
    const rows = await this.liveRows<{ field: string; label: string; n: string }>(statement, bindings);
    for (const r of rows) result[r.field][r.label] = Number(r.n);
    return result;
  }

  async stats(): Promise<IndexStats[]> {
    const versions = await this.rowsOrNone<{ version: number; live: boolean }>(`SELECT version, live FROM ${this.versionsTable} ORDER BY version`);
    const stats: IndexStats[] = [];
    for (const { version, live } of versions) {
      const table = this.table(version);
      const rows = await this.rowsOrNone<{ type: string; n: string; size: string }>(
        `SELECT t.type, count(d.id) AS n, pg_total_relation_size(?::regclass) AS size
           FROM unnest(?::text[]) AS t(type) LEFT JOIN ${table} AS d ON d.type = t.type GROUP BY t.type`,
        [table, SEARCH_TYPES]);
      if (rows.length === 0) continue;
      const totalDocs = rows.reduce((sum, r) => sum + Number(r.n), 0);
      const size = Number(rows[0].size);
      for (const type of SEARCH_TYPES) {
        const documents = Number(rows.find((r) => r.type === type)?.n ?? 0);
        stats.push({
          alias: this.aliasOf(type), index: `${this.aliasOf(type)}_v${version}`, type, version, live, documents,
          // One table holds every type: its size shared out by document counts.
          sizeBytes: Math.round(totalDocs ? size * documents / totalDocs : size / SEARCH_TYPES.length), health: 'green',
        });
      }
    }
    return stats;
  }

  async count(version: number, type: SearchType): Promise<number> {
    const rows = await this.rowsOrNone<{ n: string }>(`SELECT count(*) AS n FROM ${this.table(version)} WHERE type = ?`, [type]);
    return Number(rows[0]?.n ?? 0);
  }

  /** Names of the tables (and the view) of this prefix that exist. */
  private async relations(): Promise<Set<string>> {
    const rows = await this.rowsOrNone<{ name: string }>(
      `SELECT c.relname AS name FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'v') AND starts_with(c.relname, ?)`,
      [`${this.prefix}search`]);
    return new Set(rows.map((r) => r.name));
  }

  /** The version tables that exist (a version row whose table was dropped by hand is left out). */
  private async versionTables(): Promise<{ version: number; live: boolean; table: string }[]> {
    const [versions, relations] = await Promise.all([
      this.rowsOrNone<{ version: number; live: boolean }>(`SELECT version, live FROM ${this.versionsTable} ORDER BY version`),
      this.relations(),
    ]);
    return versions.filter((v) => relations.has(`${this.prefix}search_v${v.version}`)).map((v) => ({ ...v, table: `${this.prefix}search_v${v.version}` }));
  }

  async createMissingIndices(): Promise<CreatedIndices> {
    const live = await this.liveVersion();
    const version = live ?? 1;
    const before = await this.relations();
    await this.ensureVersion(version);
    // One table holds every type of a version: created, it is every type's index.
    const created = before.has(`${this.prefix}search_v${version}`) ? [] : SEARCH_TYPES.map((type) => `${this.aliasOf(type)}_v${version}`);
    let aliasesRepaired: string[] = [];
    if (live !== null && !before.has(`${this.prefix}search`)) {
      await this.tx(async (trx) => {
        await this.lock(trx);
        await trx.raw(`CREATE OR REPLACE VIEW ${this.view} AS SELECT * FROM ${this.table(live)}`);
      });
      aliasesRepaired = SEARCH_TYPES.map((type) => this.aliasOf(type));
    }
    return { version, created, aliasesRepaired };
  }

  async deleteIndex(name: string): Promise<void> {
    const entry = (await this.stats()).find((s) => s.index === name);
    if (!entry) throw new IndexNotFound(name);
    // A type's index is its rows in the version's table: deleted, it is at once the empty index
    // behind the same alias (as the other engines recreate a deleted live index).
    await this.tx((trx) => trx.raw(`DELETE FROM ${this.table(entry.version)} WHERE type = ?`, [entry.type]));
  }

  /** VACUUM (ANALYZE): reclaims the space of deleted and replaced rows and updates the planner's statistics, as merging segments does. */
  async forceMerge(): Promise<MaintenanceResult> {
    const targets = [...(await this.versionTables()).map((t) => t.table), ...[...await this.relations()].filter((r) => r === `${this.prefix}search_checkpoints`)];
    if (targets.length === 0) return { targets, details: { statement: 'VACUUM (ANALYZE)' } };
    // Not in a transaction (VACUUM refuses one); the pool's connection has no statement timeout.
    await this.guard(() => this.knex.raw(`VACUUM (ANALYZE) ${targets.map((t) => `"${t}"`).join(', ')}`), 1, MAINTENANCE_TIMEOUT_MS);
    return { targets, details: { statement: 'VACUUM (ANALYZE)', deadTuples: await this.deadTuples(targets) } };
  }

  async clearCache(): Promise<MaintenanceResult> {
    // Shared buffers and the OS page cache are the server's; PostgreSQL keeps no query cache.
    throw new OperationNotSupported('postgres', 'cache-clear');
  }

  async refreshAll(): Promise<MaintenanceResult> {
    // A committed row is searchable by the next query: there is nothing to refresh.
    throw new OperationNotSupported('postgres', 'refresh');
  }

  /**
   * The mapping's equivalent is each version table's columns and indexes: a column missing or of
   * another type needs a reindex (nothing changed); else the missing indexes are created and every
   * index rebuilt (REINDEX TABLE CONCURRENTLY: searches and writes go on meanwhile).
   */
  async updateMapping(): Promise<MaintenanceResult> {
    const tables = await this.versionTables();
    if (tables.length === 0) return { targets: [], details: { indexesCreated: [] } };
    const columns = await this.rowsOrNone<{ table: string; column: string; type: string }>(
      `SELECT c.relname AS table, a.attname AS column, format_type(a.atttypid, a.atttypmod) AS type
         FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        WHERE c.relnamespace = current_schema()::regnamespace AND c.relname = ANY(?::text[]) AND a.attnum > 0 AND NOT a.attisdropped`,
      [tables.map((t) => t.table)]);
    const conflicts: string[] = [];
    for (const { table } of tables) {
      for (const [column, type] of DOCUMENT_COLUMNS) {
        const found = columns.find((c) => c.table === table && c.column === column);
        if (!found) conflicts.push(`${table}: column ${column} is missing`);
        else if (found.type !== PG_TYPE_NAME[type]) conflicts.push(`${table}: column ${column} is ${found.type}, the current layout has ${PG_TYPE_NAME[type]}`);
      }
    }
    if (conflicts.length) throw new MappingNeedsReindex(conflicts);
    const indexes = async () => (await this.rowsOrNone<{ name: string }>('SELECT indexname AS name FROM pg_indexes WHERE tablename = ANY(?::text[])', [tables.map((t) => t.table)])).map((r) => r.name);
    const before = new Set(await indexes());
    for (const { version } of tables) await this.ensureVersion(version);
    const indexesCreated = (await indexes()).filter((name) => !before.has(name)).sort();
    for (const { table } of tables) {
      // Not in a transaction (CONCURRENTLY refuses one).
      await this.guard(() => this.knex.raw(`REINDEX TABLE CONCURRENTLY "${table}"`), 1, MAINTENANCE_TIMEOUT_MS);
    }
    return { targets: tables.map((t) => t.table), details: { statement: 'REINDEX TABLE CONCURRENTLY', indexesCreated } };
  }

  /** Live and dead rows of the search tables, as the statistics collector last counted them. */
  private async deadTuples(tables: readonly string[]): Promise<Record<string, { live: number; dead: number; lastVacuum: string | null }>> {
    const rows = await this.rowsOrNone<{ name: string; live: string; dead: string; vacuumed: Date | null }>(
      `SELECT relname AS name, n_live_tup AS live, n_dead_tup AS dead, greatest(last_vacuum, last_autovacuum) AS vacuumed
         FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = ANY(?::text[]) ORDER BY relname`, [[...tables]]);
    return Object.fromEntries(rows.map((r) => [r.name, { live: Number(r.live), dead: Number(r.dead), lastVacuum: r.vacuumed?.toISOString() ?? null }]));
  }

  /** Reachable: green. Its details: the database's size and the search tables' live and dead rows (VACUUM, the force merge, reclaims dead ones). */
  async clusterHealth(): Promise<ClusterHealth> {
    const [server] = await this.rowsOrNone<{ database: string; size: string; version: string }>(
      'SELECT current_database() AS database, pg_database_size(current_database()) AS size, current_setting(\'server_version\') AS version');
    const tables = [...await this.relations()].filter((r) => r !== `${this.prefix}search`).sort();
    return {
      status: 'green', reasons: [`PostgreSQL ${server.version} answers (database ${server.database})`], clusterName: server.database, nodes: 1, shards: null,
      details: { databaseSizeBytes: Number(server.size), tables: await this.deadTuples(tables) },
    };
  }

  /** The server as one node: documents and rows written from its statistics; no heap, disk or query count of its own to tell. */
  async nodeStats(): Promise<NodeStats[]> {
    const tables = (await this.versionTables()).map((t) => t.table);
    const [server] = await this.rowsOrNone<{ address: string | null; port: number | null; version: string }>(
      'SELECT host(inet_server_addr()) AS address, inet_server_port() AS port, current_setting(\'server_version\') AS version');
    const [counted] = tables.length
      ? await this.rowsOrNone<{ documents: string; written: string }>(
        `SELECT (${tables.map((t) => `(SELECT count(*) FROM "${t}")`).join(' + ')}) AS documents,
                (SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = ANY(?::text[])) AS written`,
        [tables])
      : [{ documents: '0', written: '0' }];
    const where = server.address ? `${server.address}:${server.port}` : 'local socket';
    return [{
      id: where, name: `PostgreSQL ${server.version} (${where})`, heap: null, disk: null,
      documents: Number(counted.documents), indexingTotal: Number(counted.written), searchTotal: null,
    }];
  }

  async close(): Promise<void> {
    // The knex is the service's: it closes it.
  }

  /** Serialises schema changes of this prefix (two processes starting together, a switch during a drop). */
  private async lock(trx: Knex.Transaction): Promise<void> {
    await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`search:${this.prefix}`]);
  }

  /** Rows of a query; none when the tables do not exist yet. */
  private async rowsOrNone<T>(statement: string, bindings: readonly unknown[] = []): Promise<T[]> {
    try {
      return await this.tx(async (trx) => (await trx.raw<{ rows: T[] }>(statement, bindings as Knex.RawBinding[])).rows);
    } catch (error) {
      if (isUndefinedTable(error)) return [];
      throw error;
    }
  }

  /** Rows read through the alias; none before the first switch. */
  private async liveRows<T>(statement: string, bindings: readonly unknown[]): Promise<T[]> {
    return this.rowsOrNone<T>(statement, bindings);
  }

  /** One transaction with the request timeout on each statement; the whole bounded too (a connection that never comes). */
  private tx<T>(work: (trx: Knex.Transaction) => Promise<T>, statements = 1): Promise<T> {
    return this.guard(() => this.knex.transaction(async (trx) => {
      await trx.raw('SELECT set_config(\'statement_timeout\', ?, true)', [String(this.settings.requestTimeoutMs)]);
      return work(trx);
    }), statements);
  }

  private async guard<T>(operation: () => Promise<T>, statements = 1, limitMs = this.settings.requestTimeoutMs): Promise<T> {
    const limit = limitMs * Math.max(1, statements);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new SearchUnavailable('postgres', new Error(`no answer within ${limit} ms`))), limit);
    });
    try {
      return await Promise.race([operation(), timeout]);
    } catch (error) {
      if (error instanceof SearchUnavailable) throw error;
      if (isUnavailable(error)) throw new SearchUnavailable('postgres', error);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The columns of a version table: name, type, NOT NULL. Filters, sorts and facets read them; `document` is what a hit answers. */
const DOCUMENT_COLUMNS: readonly (readonly [string, 'text' | 'text[]' | 'timestamptz' | 'jsonb' | 'tsvector', boolean])[] = [
  ['type', 'text', true], ['id', 'text', true], ['project_id', 'text', true], ['project', 'text', false], ['title', 'text', true],
  ['tags', 'text[]', true], ['folder', 'text', false], ['template', 'text', false], ['state', 'text', false], ['status', 'text', false],
  ['creator', 'text', false], ['configuration', 'text', false], ['branch', 'text', false], ['failure_type', 'text', false],
  ['run_id', 'text', false], ['case_id', 'text', false], ['custom_names', 'text[]', true],
  ['created_at', 'timestamptz', true], ['updated_at', 'timestamptz', false], ['executed_at', 'timestamptz', false],
  ['document', 'jsonb', true],
  ['title_tsv', 'tsvector', true], ['description_tsv', 'tsvector', true], ['content_tsv', 'tsvector', true], ['custom_tsv', 'tsvector', true],
];

/** A column type as format_type() names it. */
const PG_TYPE_NAME: Record<(typeof DOCUMENT_COLUMNS)[number][1], string> = {
  text: 'text', 'text[]': 'text[]', timestamptz: 'timestamp with time zone', jsonb: 'jsonb', tsvector: 'tsvector',
};

function checkedVersion(version: number): number {
  if (!Number.isSafeInteger(version) || version < 1) throw new Error(`search index version must be a positive integer, not ${version}`);
  return version;
}

/** Text longer than this (in characters) is cut in a search document, and before it is indexed (see TSV). */
const MAX_TEXT = 200_000;

/**
 * A tsvector's lexemes hold at most 1 MB (to_tsvector fails past it), and they are never longer
 * than the text they come from: each field's text is indexed up to MAX_TEXT characters (800 kB at
 * 4 bytes a character) — the custom field values too, which are joined into one text. What is
 * indexed is bounded, not what is stored.
 */
const TSV = (column: string, expr: string, weight: 'A' | 'B' | 'C' | 'D') =>
  `setweight(to_tsvector(${CONFIG}, ${analysed(`left(coalesce(${expr}, ''), ${MAX_TEXT})`)}), '${weight}') AS ${column}`;

/** One multi-row upsert of a chunk (one JSON array parameter). */
function upsertSql(table: string): string {
  const columns = [
    'type', 'id', 'project_id', 'project', 'title', 'tags', 'folder', 'template', 'state', 'status', 'creator', 'configuration',
    'branch', 'failure_type', 'run_id', 'case_id', 'custom_names', 'created_at', 'updated_at', 'executed_at', 'document',
    'title_tsv', 'description_tsv', 'content_tsv', 'custom_tsv',
  ];
  const text = (key: string) => `e.d->>'${key}'`;
  const customValues = `(SELECT string_agg(cf->>'value', E'\\n') FROM jsonb_array_elements(e.d->'customFields') AS cf)`;
  return `INSERT INTO ${table} (${columns.join(', ')})
    SELECT ${text('type')}, ${text('id')}, ${text('projectId')}, ${text('project')}, ${text('title')},
           ARRAY(SELECT jsonb_array_elements_text(e.d->'tags')), ${text('folder')}, ${text('template')}, ${text('state')}, ${text('status')},
           ${text('creator')}, ${text('configuration')}, ${text('branch')}, ${text('failureType')}, ${text('runId')}, ${text('caseId')},
           ARRAY(SELECT cf->>'name' FROM jsonb_array_elements(e.d->'customFields') AS cf),
           (${text('createdAt')})::timestamptz, (${text('updatedAt')})::timestamptz, (${text('executedAt')})::timestamptz, e.d,
           ${TSV('title_tsv', text('title'), 'A')}, ${TSV('description_tsv', text('description'), 'B')},
           ${TSV('content_tsv', text('content'), 'C')}, ${TSV('custom_tsv', customValues, 'D')}
      FROM jsonb_array_elements(?::jsonb) AS e(d)
    ON CONFLICT (type, id) DO UPDATE SET ${columns.slice(2).map((c) => `${c} = EXCLUDED.${c}`).join(', ')}`;
}


/**
 * jsonb refuses U+0000: it goes (as PostgreSQL text would refuse it anyway); overlong text is cut,
 * never between the halves of a surrogate pair (jsonb refuses the half left: "invalid input syntax
 * for type json", a document no write could take).
 */
function jsonWithoutNul(docs: readonly SearchDocument[]): string {
  return JSON.stringify(docs, (_, value: unknown) => (typeof value === 'string' ? cutText(value).replaceAll('\u0000', '') : value));
}

function cutText(value: string): string {
  if (value.length <= MAX_TEXT) return value;
  const end = /[\ud800-\udbff]/.test(value[MAX_TEXT - 1]) ? MAX_TEXT - 1 : MAX_TEXT;
  return value.slice(0, end);
}

const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?$/;
const isDate = (value: unknown) => typeof value === 'string' && ISO_DATE.test(value) && !Number.isNaN(Date.parse(value));
const isText = (value: unknown) => typeof value === 'string';
const isNullableText = (value: unknown) => value === null || value === undefined || typeof value === 'string';

/** Why the engine refuses a document (as OpenSearch refuses one its mapping cannot take), or null. */
function refusal(doc: SearchDocument): WriteFailure | null {
  const fail = (reason: string): WriteFailure => ({ type: doc.type, id: String(doc.id), reason, status: 400 });
  if (!isSearchType(doc.type)) return fail(`unknown type ${JSON.stringify(doc.type)}`);
  if (!isText(doc.id) || doc.id === '') return fail('id must be a non-empty string');
  if (!isText(doc.projectId)) return fail('projectId must be a string');
  if (!isText(doc.title)) return fail('title must be a string');
  if (!isDate(doc.createdAt)) return fail(`createdAt is not a date: ${JSON.stringify(doc.createdAt)}`);
  for (const field of ['updatedAt', 'executedAt'] as const) {
    if (doc[field] !== null && doc[field] !== undefined && !isDate(doc[field])) return fail(`${field} is not a date: ${JSON.stringify(doc[field])}`);
  }
  if (!Array.isArray(doc.tags) || !doc.tags.every(isText)) return fail('tags must be strings');
  if (!Array.isArray(doc.customFields) || !doc.customFields.every((f) => f && isText(f.name) && isNullableText(f.value))) return fail('customFields must be {name, value} strings');
  for (const field of ['project', 'description', 'content', 'folder', 'template', 'state', 'status', 'creator', 'configuration', 'branch', 'failureType', 'runId', 'caseId'] as const) {
    if (!isNullableText(doc[field])) return fail(`${field} must be a string or null`);
  }
  return null;
}

/** ts_headline options: short fields whole, long ones as up to three fragments. */
const WHOLE = 'StartSel=<mark>, StopSel=</mark>, HighlightAll=true';
const FRAGMENTS = 'StartSel=<mark>, StopSel=</mark>, MaxFragments=3, MaxWords=30, MinWords=12, FragmentDelimiter="<frag/>"';

function headline(textExpr: string, query: string, options: string): string {
  return `replace(ts_headline(${CONFIG}, ${analysed(textExpr)}, ${query}, '${options}'), ${NAME_SEPARATOR}, '')`;
}

/** A text array of highlight fragments of one field (null when it did not match). */
function highlightSql(field: TextField, query: string | null): string {
  if (query === null) return 'NULL::text[]';
  const tsv = `p.${TSV_COLUMN[field]}`;
  if (field === 'customFields.value') {
    return `CASE WHEN ${tsv} @@ ${query} THEN ARRAY(SELECT ${headline(`cf->>'value'`, query, WHOLE)} FROM jsonb_array_elements(p.document->'customFields') AS cf
      WHERE to_tsvector(${CONFIG}, ${analysed(`coalesce(cf->>'value', '')`)}) @@ ${query}) END`;
  }
  const source = `(p.document->>'${field}')`;
  if (field === 'title') return `CASE WHEN ${tsv} @@ ${query} THEN ARRAY[${headline(source, query, WHOLE)}] END`;
  return `CASE WHEN ${tsv} @@ ${query} THEN string_to_array(${headline(source, query, FRAGMENTS)}, '<frag/>') END`;
}

function isUndefinedTable(error: unknown): boolean {
  return (error as { code?: string })?.code === '42P01';
}

const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'EAI_AGAIN',
  '57014', '57P01', '57P02', '57P03', '53300', '55000', '3D000']);

/** A database that does not answer, refuses connections or cut one, or a statement past the timeout. */
function isUnavailable(error: unknown): boolean {
  const e = error as { code?: string; name?: string; message?: string } | null;
  if (!e) return false;
  if (e.code && (UNAVAILABLE_CODES.has(e.code) || e.code.startsWith('08'))) return true;
  if (e.name === 'KnexTimeoutError') return true;
  return /Connection terminated|connection ended|Client has encountered a connection error|timeout exceeded when trying to connect/i.test(e.message ?? '');
}
