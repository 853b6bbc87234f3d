/**
 * `npx tsx scripts/events-doc.ts > docs/events.md`: writes the event catalogue from the schemas
 * themselves, so the documentation cannot drift from the contracts
 * (test/contracts/eventsDoc.unit.spec.ts checks that docs/events.md is up to date).
 */
import fs from 'node:fs';
import path from 'node:path';
import { EVENTS_SCHEMA_DIR } from '../contracts/validator';

const INTRO = `# Events: the open stream

Every change in Testament is an event in an append-only log. With \`KAFKA_BROKERS\` set, the relay
role publishes every event, in the order of the log, to one Kafka topic, so that a consumer of
your own (in any language) can follow it. This page is generated from \`contracts/\` by
\`npx tsx scripts/events-doc.ts > docs/events.md\`.

## The topic

- Name: \`KAFKA_TOPIC\` (default \`testament.events\`), created by Testament when missing with
  \`KAFKA_PARTITIONS\` partitions (default 1; an existing topic keeps its own count).
- Key: the stream id (\`<category>-<id>\`, e.g. \`repositoryCase-42\`), partitioned with Kafka's
  default (murmur2) partitioner, so **all events of one stream are on one partition, in order**.
  Across streams there is no order but the \`position\`.
- Value: the event envelope as UTF-8 JSON (schema: \`contracts/envelope.schema.json\`).
- Headers: \`event-id\` (uuid), \`event-type\`, \`schema-version\`, \`position\` (decimal).
- Delivery is **at least once**: after a crash the relay publishes again from its last
  acknowledged checkpoint, so an event may appear twice. Recognise repeats by \`position\`: on a
  partition, positions only increase; an event whose position is not above the last one you
  applied from that partition is a repeat (or, per stream, by \`revision\`).
- Access: identity events carry credentials in derived form — \`UserRegistered.passwordHash\` and
  \`UserPasswordChanged.passwordHash\` (argon2id; never the password itself) and
  \`ApiTokenCreated.tokenHash\` (HMAC-SHA256 with the server's \`TOKEN_SECRET\`; never the token
  itself). Secrets inside values (an integration's \`settings.apiToken\`) are sealed, each with a
  key of its own kept outside the log ([compliance.md](compliance.md), "Secrets"); events written
  before that hold them in clear. Grant read access to the topic as you would to the database.

## Over HTTP: \`GET /api/events\`

The same log without a broker, for an analyst's own tools: \`GET /api/events?after=<position>\`
answers NDJSON (\`application/x-ndjson\`), one envelope per line (the topic's value, below), in the
order of the log, strictly after \`after\` (default \`0\`: from the start).

- \`limit\` (default 1,000, at most 10,000) events per page; a page also ends at 16 MB of JSON or
  after 50,000 events read for it (a filter that matches little). Header \`X-Next-After\`: the
  \`after\` of the next page (the last position this page read, which may lie past its last line);
  \`X-Head-Position\`: the log's last position when the page was read. An empty page whose
  \`X-Next-After\` equals your \`after\` means you are at the head: ask again later.
- \`types=TestRunCreated,TestRunUpdated\`: only these types (400 for a type that does not exist);
  \`project=<id>\`: only events of that project (its own, or along its entity's project path, as
  the audit trail assigns them).
- Administrators read all of it; project administrators the events of the projects they
  administer (never events without a project: users, tokens, global configuration); anyone else
  403 \`forbidden\`. A page filtered by project ends before the first event whose project the audit
  projection does not know yet, so paging never skips one.
- Credentials are not in it: \`passwordHash\` and \`tokenHash\` read \`"redacted"\`; a sealed secret in
  an integration's \`settings\` reads \`{"$secret": "<id>"}\`, one an older version recorded in clear
  \`"[redacted]"\`.

## The envelope

| Field | Type | Meaning |
|---|---|---|
| \`id\` | uuid | the event's identity |
| \`type\` | string | PascalCase, past tense (below) |
| \`schemaVersion\` | integer | version of the \`data\` schema; a published schema never changes, a new shape is a new version |
| \`streamId\` | string | \`<category>-<id>\`: the aggregate the event belongs to |
| \`revision\` | decimal string | position of the event in its stream, from 0 |
| \`position\` | decimal string | position in the global log (64-bit: do not parse into a double) |
| \`recordedAt\` | ISO 8601 | when it was stored |
| \`data\` | object | the event itself, per its schema below |
| \`metadata.actor\` | object | \`userId\` (integer, null for the system), \`tokenId\` (when an API token was used), \`sessionRef\` (for \`via: session\`: 16 hex digits of SHA-256 of the session id; not on older events), \`via\` (\`api\`: a bearer token, \`cli\`: a bearer token from the command-line client, \`session\`, \`import\`, \`system\`) |
| \`metadata.ip\` | string | caller's address, when known |
| \`metadata.correlationId\` | string | the request that caused it (\`X-Correlation-Id\`) |
| \`metadata.causationId\` | string or null | the event or command that caused it, when not a request |

Example value:

\`\`\`json
{"id":"0b6f3c0e-5f8e-4a43-9d0c-2f8f4c7f1a10","type":"ProjectCreated","schemaVersion":1,"streamId":"project-1",
 "revision":"0","position":"7","recordedAt":"2026-11-25T22:04:14.917Z",
 "data":{"projectId":1,"name":"Checkout","createdAt":"2026-11-25T22:04:14.900Z"},
 "metadata":{"actor":{"userId":1,"tokenId":1,"via":"api"},"ip":"127.0.0.1","correlationId":"5c1d…","causationId":null}}
\`\`\`

## Event types
`;

interface Schema { title: string; description?: string; required?: string[]; properties?: Record<string, PropertySchema> }
interface PropertySchema {
  type?: string | string[]; enum?: unknown[]; format?: string; pattern?: string; minimum?: number; maximum?: number; maxLength?: number; maxItems?: number;
  $ref?: string; properties?: Record<string, PropertySchema>; description?: string;
}

function describeType(p: PropertySchema): string {
  if (p.enum) return p.enum.map((v) => `\`${JSON.stringify(v)}\``).join(' \\| ');
  const json = p.$ref && /^#\/\$defs\/json(\d+)$/.exec(p.$ref);
  if (json) return `JSON value (at most ${json[1]} levels deep)`;
  const types = Array.isArray(p.type) ? p.type.join(' or ') : p.type ?? 'any';
  const extra = [
    p.format, p.pattern && `pattern \`${p.pattern.replace(/\|/g, '\\|')}\``, p.minimum !== undefined && `≥ ${p.minimum}`, p.maximum !== undefined && `≤ ${p.maximum}`,
    p.maxLength !== undefined && `≤ ${p.maxLength} characters`, p.maxItems !== undefined && `≤ ${p.maxItems} items`,
  ].filter(Boolean);
  return extra.length ? `${types} (${extra.join(', ')})` : types;
}

function rows(properties: Record<string, PropertySchema>, required: string[], prefix = ''): string[] {
  return Object.entries(properties).flatMap(([name, p]) => [
    `| \`${prefix}${name}\` | ${describeType(p)} | ${required.includes(name) ? 'yes' : 'no'} |`,
    ...(p.properties ? rows(p.properties, [], `${prefix}${name}.`) : []),
  ]);
}

export function renderEventsDoc(dir = EVENTS_SCHEMA_DIR): string {
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.schema.json')).sort();
  const sections = files.map((file) => {
    const schema = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as Schema;
    const version = /\.v(\d+)\.schema\.json$/.exec(file)![1];
    return [
      `### ${schema.title} (v${version})`,
      '',
      schema.description ?? '',
      '',
      `Schema: \`contracts/events/${file}\`. No other properties are allowed.`,
      '',
      '| Field | Type | Required |',
      '|---|---|---|',
      ...rows(schema.properties ?? {}, schema.required ?? []),
      '',
    ].join('\n');
  });
  return `${INTRO}\n${sections.join('\n')}`;
}

if (require.main === module) process.stdout.write(renderEventsDoc());
