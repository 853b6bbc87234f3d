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
-- array (appending to a jsonb value would copy it for every request).
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
BEGIN
  SELECT position, coalesce(hash, decode(repeat('00', 32), 'hex')) INTO v_head, v_hash FROM es_head WHERE id = 1 FOR UPDATE;
  FOR v_req IN SELECT * FROM jsonb_array_elements(p_requests) LOOP
    SELECT revision INTO v_current FROM es_streams WHERE stream_id = v_req->>'streamId';
    IF NOT FOUND THEN v_current := -1; END IF;
    v_expected := v_req->>'expected';
    IF (v_expected = 'no-stream' AND v_current <> -1)
       OR (v_expected NOT IN ('any', 'no-stream') AND v_current <> v_expected::bigint) THEN
      v_results := array_append(v_results, jsonb_build_object('ok', false, 'actual', v_current::text));
      CONTINUE;
    END IF;
    v_revision := v_current;
    v_stream := v_req->>'streamId';
    FOR v_event IN SELECT * FROM jsonb_array_elements(v_req->'events') LOOP
      v_head := v_head + 1;
      v_revision := v_revision + 1;
      -- chain: begin (bench/append.ts times the store without these lines)
      -- es_event_content's bytes, written out as simple expressions (a call of it here costs a fifth of the append).
      v_id := ((v_event->>'id')::uuid)::text;
      v_type := v_event->>'type';
      v_version := ((v_event->>'schemaVersion')::integer)::text;
      v_data := (v_event->'data')::text;
      v_metadata := (v_event->'metadata')::text;
      v_hash := sha256(v_hash || convert_to(concat(
        octet_length(v_head::text), ':', v_head, octet_length(v_id), ':', v_id, octet_length(v_stream), ':', v_stream,
        octet_length(v_revision::text), ':', v_revision, octet_length(v_type), ':', v_type, octet_length(v_version), ':', v_version,
        octet_length(v_at), ':', v_at, octet_length(v_data), ':', v_data, octet_length(v_metadata), ':', v_metadata), 'UTF8'));
      -- chain: end
      INSERT INTO es_events (position, id, stream_id, revision, type, schema_version, data, metadata, recorded_at, shallow, hash)
      VALUES (v_head, (v_event->>'id')::uuid, v_req->>'streamId', v_revision, v_event->>'type',
              (v_event->>'schemaVersion')::integer, v_event->'data', v_event->'metadata', v_now,
              CASE WHEN pg_column_size(v_event->'data') > 8192 AND jsonb_typeof(v_event->'data') = 'object' THEN
                (SELECT jsonb_object_agg(key, CASE WHEN jsonb_typeof(value) IN ('object', 'array') THEN '{}'::jsonb ELSE value END)
                 FROM jsonb_each(v_event->'data')) END,
              v_hash);
    END LOOP;
    INSERT INTO es_streams (stream_id, revision) VALUES (v_req->>'streamId', v_revision)
      ON CONFLICT (stream_id) DO UPDATE SET revision = EXCLUDED.revision;
    v_results := array_append(v_results, jsonb_build_object('ok', true, 'revision', v_revision::text, 'position', v_head::text));
  END LOOP;
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
