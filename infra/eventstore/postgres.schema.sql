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
BEGIN
  SELECT position INTO v_head FROM es_head WHERE id = 1 FOR UPDATE;
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
    FOR v_event IN SELECT * FROM jsonb_array_elements(v_req->'events') LOOP
      v_head := v_head + 1;
      v_revision := v_revision + 1;
      INSERT INTO es_events (position, id, stream_id, revision, type, schema_version, data, metadata, recorded_at, shallow)
      VALUES (v_head, (v_event->>'id')::uuid, v_req->>'streamId', v_revision, v_event->>'type',
              (v_event->>'schemaVersion')::integer, v_event->'data', v_event->'metadata', v_now,
              CASE WHEN pg_column_size(v_event->'data') > 8192 AND jsonb_typeof(v_event->'data') = 'object' THEN
                (SELECT jsonb_object_agg(key, CASE WHEN jsonb_typeof(value) IN ('object', 'array') THEN '{}'::jsonb ELSE value END)
                 FROM jsonb_each(v_event->'data')) END);
    END LOOP;
    INSERT INTO es_streams (stream_id, revision) VALUES (v_req->>'streamId', v_revision)
      ON CONFLICT (stream_id) DO UPDATE SET revision = EXCLUDED.revision;
    v_results := array_append(v_results, jsonb_build_object('ok', true, 'revision', v_revision::text, 'position', v_head::text));
  END LOOP;
  UPDATE es_head SET position = v_head WHERE id = 1;
  PERFORM pg_notify('es_appended', v_head::text);
  RETURN to_jsonb(v_results);
END $$;
