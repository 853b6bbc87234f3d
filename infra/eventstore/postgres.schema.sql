-- The PostgreSQL event store. Positions are assigned under the row lock on es_head, which is held
-- until commit: transactions therefore commit in position order and a reader that trusts
-- `position > last` can never skip an event that commits late (see docs/architecture.md).
CREATE TABLE IF NOT EXISTS es_events (
  position       bigint      PRIMARY KEY,
  id             uuid        NOT NULL UNIQUE,
  stream_id      text        NOT NULL,
  revision       bigint      NOT NULL,
  type           text        NOT NULL,
  schema_version integer     NOT NULL,
  data           jsonb       NOT NULL,
  metadata       jsonb       NOT NULL,
  recorded_at    timestamptz NOT NULL,
  UNIQUE (stream_id, revision)
);

-- A large event's data read shallow (top-level scalars kept, nested objects and arrays emptied),
-- computed once when it is appended: the readers that skip an import chunk's rows then read this
-- small value instead of decompressing the whole chunk each. Derived from `data`, never evidence;
-- null for small events and for events appended before it existed (read shallow from `data`).
-- Added only when missing: ALTER TABLE locks the whole table even when it changes nothing, and every
-- process runs this file when it starts, while others append and read.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'es_events'::regclass AND attname = 'shallow' AND NOT attisdropped) THEN
    ALTER TABLE es_events ADD COLUMN shallow jsonb;
  END IF;
END $$;

CREATE TABLE IF NOT EXISTS es_streams (
  stream_id text   PRIMARY KEY,
  revision  bigint NOT NULL
);

CREATE TABLE IF NOT EXISTS es_head (
  id       integer PRIMARY KEY CHECK (id = 1),
  position bigint  NOT NULL
);
INSERT INTO es_head (id, position) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;

-- Tamper evidence (docs/compliance.md): each event's hash is SHA-256 of the hash of the event
-- before it in the global order (32 zero bytes before the first) and of its own content
-- (es_event_content); es_head keeps the last hash. Added only when missing, as `shallow` above.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'es_events'::regclass AND attname = 'hash' AND NOT attisdropped) THEN
    ALTER TABLE es_events ADD COLUMN hash bytea;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'es_head'::regclass AND attname = 'hash' AND NOT attisdropped) THEN
    ALTER TABLE es_head ADD COLUMN hash bytea;
  END IF;
END $$;

-- The bytes an event's hash covers: its position, id, stream, revision, type, schema version, the
-- time it was recorded (microseconds since 1970, UTC), data and metadata (jsonb's text, which
-- does not depend on the session), each as its length in bytes, ':' and its UTF-8 text.
-- es_append computes the same bytes inline (keep the two alike: test/infra/chain.int.spec.ts).
CREATE OR REPLACE FUNCTION es_event_content(p_position bigint, p_id uuid, p_stream_id text, p_revision bigint, p_type text,
  p_schema_version integer, p_recorded_at timestamptz, p_data jsonb, p_metadata jsonb) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT convert_to(concat(
    octet_length(f.p), ':', f.p, octet_length(f.i), ':', f.i, octet_length(f.s), ':', f.s, octet_length(f.r), ':', f.r,
    octet_length(f.t), ':', f.t, octet_length(f.v), ':', f.v, octet_length(f.a), ':', f.a, octet_length(f.d), ':', f.d,
    octet_length(f.m), ':', f.m), 'UTF8')
  FROM (SELECT p_position::text AS p, p_id::text AS i, p_stream_id AS s, p_revision::text AS r, p_type AS t, p_schema_version::text AS v,
    (extract(epoch FROM p_recorded_at) * 1000000)::bigint::text AS a, p_data::text AS d, p_metadata::text AS m) f
$$;

-- Appends a batch of requests [{streamId, expected, events: [{id, type, schemaVersion, data, metadata}]}]
-- in one transaction. Each request is checked on its own: a request whose stream is not at the
-- expected revision writes nothing and is reported as {ok: false, actual}; the others are written.
-- `expected` is 'any', 'no-stream' or a revision as a decimal string. Outcomes are collected in an
-- array (appending to a jsonb value would copy it for every request). The streams' revisions are
-- read with one statement and the events and streams written with one each: half the time of a
-- statement per event (500 one-event appends to new streams, the rollback's batch: 1.43 → 0.75 s).
CREATE OR REPLACE FUNCTION es_append(p_requests jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_head     bigint;
  v_now      timestamptz := clock_timestamp();
  v_req      jsonb;
  v_event    jsonb;
  v_current  bigint;
  v_expected text;
  v_revision bigint;
  v_results  jsonb[] := '{}';
  v_hash     bytea;
  v_at       text := (extract(epoch FROM v_now) * 1000000)::bigint::text;
  v_stream   text;
  v_id       text;
  v_type     text;
  v_version  text;
  v_data     text;
  v_metadata text;
  v_known    jsonb;
  v_repeats  boolean;
  v_streams  text[] := '{}';
  v_revs     bigint[] := '{}';
  e_pos      bigint[] := '{}';
  e_id       uuid[] := '{}';
  e_stream   text[] := '{}';
  e_rev      bigint[] := '{}';
  e_type     text[] := '{}';
  e_version  integer[] := '{}';
  e_data     jsonb[] := '{}';
  e_meta     jsonb[] := '{}';
  e_hash     bytea[] := '{}';
BEGIN
  SELECT position, coalesce(hash, decode(repeat('00', 32), 'hex')) INTO v_head, v_hash FROM es_head WHERE id = 1 FOR UPDATE;
  -- The revisions of the streams the requests name, read with one statement. A stream named by
  -- more than one request (rare) has its revision moved in v_known as the loop writes it; moving it
  -- for every request would copy the whole map each time.
  SELECT coalesce(jsonb_object_agg(s.stream_id, s.revision), '{}') INTO v_known FROM es_streams s
    WHERE s.stream_id IN (SELECT r->>'streamId' FROM jsonb_array_elements(p_requests) r);
  SELECT count(*) <> count(DISTINCT r->>'streamId') INTO v_repeats FROM jsonb_array_elements(p_requests) r;
  FOR v_req IN SELECT * FROM jsonb_array_elements(p_requests) LOOP
    v_stream := v_req->>'streamId';
    v_current := coalesce((v_known->>v_stream)::bigint, -1);
    v_expected := v_req->>'expected';
    IF (v_expected = 'no-stream' AND v_current <> -1)
       OR (v_expected NOT IN ('any', 'no-stream') AND v_current <> v_expected::bigint) THEN
      v_results := array_append(v_results, jsonb_build_object('ok', false, 'actual', v_current::text));
      CONTINUE;
    END IF;
    v_revision := v_current;
    FOR v_event IN SELECT * FROM jsonb_array_elements(v_req->'events') LOOP
      v_head := v_head + 1;
      v_revision := v_revision + 1;
      v_id := ((v_event->>'id')::uuid)::text;
      v_type := v_event->>'type';
      v_version := ((v_event->>'schemaVersion')::integer)::text;
      -- chain: begin (bench/append.ts times the store without these lines)
      -- es_event_content's bytes, written out as simple expressions (a call of it here costs a fifth of the append).
      v_data := (v_event->'data')::text;
      v_metadata := (v_event->'metadata')::text;
      v_hash := sha256(v_hash || convert_to(concat(
        octet_length(v_head::text), ':', v_head, octet_length(v_id), ':', v_id, octet_length(v_stream), ':', v_stream,
        octet_length(v_revision::text), ':', v_revision, octet_length(v_type), ':', v_type, octet_length(v_version), ':', v_version,
        octet_length(v_at), ':', v_at, octet_length(v_data), ':', v_data, octet_length(v_metadata), ':', v_metadata), 'UTF8'));
      -- chain: end
      -- Rows collected here and written with one INSERT after the loop (an INSERT per event cost twice as much).
      e_pos := array_append(e_pos, v_head);
      e_id := array_append(e_id, v_id::uuid);
      e_stream := array_append(e_stream, v_stream);
      e_rev := array_append(e_rev, v_revision);
      e_type := array_append(e_type, v_type);
      e_version := array_append(e_version, v_version::integer);
      e_data := array_append(e_data, v_event->'data');
      e_meta := array_append(e_meta, v_event->'metadata');
      e_hash := array_append(e_hash, v_hash);
    END LOOP;
    IF v_revision <> v_current THEN
      IF v_repeats THEN v_known := v_known || jsonb_build_object(v_stream, v_revision); END IF;
      v_streams := array_append(v_streams, v_stream);
      v_revs := array_append(v_revs, v_revision);
    END IF;
    v_results := array_append(v_results, jsonb_build_object('ok', true, 'revision', v_revision::text, 'position', v_head::text));
  END LOOP;
  INSERT INTO es_events (position, id, stream_id, revision, type, schema_version, data, metadata, recorded_at, shallow, hash)
  SELECT e.position, e.id, e.stream_id, e.revision, e.type, e.schema_version, e.data, e.metadata, v_now,
         CASE WHEN pg_column_size(e.data) > 8192 AND jsonb_typeof(e.data) = 'object' THEN
           (SELECT jsonb_object_agg(key, CASE WHEN jsonb_typeof(value) IN ('object', 'array') THEN '{}'::jsonb ELSE value END) FROM jsonb_each(e.data)) END,
         e.hash
    FROM unnest(e_pos, e_id, e_stream, e_rev, e_type, e_version, e_data, e_meta, e_hash)
      AS e(position, id, stream_id, revision, type, schema_version, data, metadata, hash);
  -- A stream written twice in the call: its last revision (the later element) wins.
  INSERT INTO es_streams (stream_id, revision)
  SELECT DISTINCT ON (s.stream_id) s.stream_id, s.revision FROM unnest(v_streams, v_revs) WITH ORDINALITY AS s(stream_id, revision, n)
   ORDER BY s.stream_id, s.n DESC
  ON CONFLICT (stream_id) DO UPDATE SET revision = EXCLUDED.revision;
  UPDATE es_head SET position = v_head, hash = v_hash WHERE id = 1;
  PERFORM pg_notify('es_appended', v_head::text);
  RETURN to_jsonb(v_results);
END $$;

-- A log written before the chain existed gets its hashes once, in order, when no event has one
-- yet (the head locked meanwhile). Never otherwise: hashes missing after the first one are a break
-- that verification reports, not something to fill in.
DO $$
DECLARE
  v_hash bytea := decode(repeat('00', 32), 'hex');
  r      record;
BEGIN
  IF EXISTS (SELECT 1 FROM es_events) AND NOT EXISTS (SELECT 1 FROM es_events WHERE hash IS NOT NULL) THEN
    PERFORM 1 FROM es_head WHERE id = 1 FOR UPDATE;
    FOR r IN SELECT position, id, stream_id, revision, type, schema_version, recorded_at, data, metadata FROM es_events ORDER BY position LOOP
      v_hash := sha256(v_hash || es_event_content(r.position, r.id, r.stream_id, r.revision, r.type, r.schema_version, r.recorded_at, r.data, r.metadata));
      UPDATE es_events SET hash = v_hash WHERE position = r.position;
    END LOOP;
    UPDATE es_head SET hash = v_hash WHERE id = 1;
  END IF;
END $$;
