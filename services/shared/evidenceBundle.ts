import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { PassThrough, type Readable } from 'node:stream';
import { Parse as unzipParse, type Entry } from 'unzip-stream';
import { type ChainedEvent, chainHash, contentHash, GENESIS_HASH } from '../../contracts/chain';
import { isWholeZip } from './zipFile';

/**
 * The evidence bundle's format (docs/compliance.md), shared by the service that writes it
 * (services/evidence/) and the readers that check it offline (npm run verify, the CLI).
 */
export const BUNDLE_FORMAT = 'testament-evidence/1';
export const MANIFEST = 'manifest.json';

export interface ManifestEntry { path: string; bytes: number; sha256: string }
export interface Manifest {
  format: typeof BUNDLE_FORMAT;
  generatedAt: string;
  generatedBy: { userId: number; name: string };
  subject: { entity: 'testRun' | 'milestone'; id: number; projectId: number };
  /** The log's head when the bundle was made (compare with the service's anchors or /api/admin/integrity). */
  head: { position: string; hash: string | null };
  events: { count: number; first: string | null; last: string | null };
  files: ManifestEntry[];
}

/** An entry of signatures.json. */
export interface SignatureEvidence {
  signatureId: string;
  entity: string;
  entityId: number;
  /** The RecordSigned event and, when revoked, when. */
  position: string;
  revokedAt: string | null;
  /** The positions of the signed content, all in the bundle: SHA-256 of their `<position>:<hash>\n` lines is the event's contentHash. */
  contentPositions: string[];
  /** Does the bundle hold the whole signed content (its hash recomputed equals the signed one)? */
  contentIncluded: boolean;
}

/**
 * Checks an evidence bundle offline, against nothing but itself (docs/compliance.md): every file
 * against the manifest's SHA-256, every event's hash recomputed from its content and the hash
 * before it (and the links between consecutive positions), every signature's content hash from
 * the events it names, every kept file against the SHA-256 its FileStored event recorded. What it
 * cannot show alone: that the bundle's head is the service's (compare with an anchor).
 */

export interface BundleProblem { check: 'archive' | 'manifest' | 'file' | 'event' | 'signature'; path?: string; position?: string; detail: string }

export interface BundleReport {
  ok: boolean;
  format: string | null;
  subject: Manifest['subject'] | null;
  head: Manifest['head'] | null;
  checked: { files: number; events: number; signatures: number; keptFiles: number };
  problems: BundleProblem[];
}

/** At most this many problems are listed (the first ones). */
const MAX_PROBLEMS = 50;
const EVENT_FIELDS: (keyof ChainedEvent)[] = ['position', 'id', 'streamId', 'revision', 'type', 'schemaVersion', 'recordedAtMicros', 'data', 'metadata', 'hash', 'previousHash'];
/** Entries read whole (the others are only hashed). */
const READ_WHOLE = new Set([MANIFEST, 'events.ndjson', 'signatures.json']);

interface Read { hashes: Map<string, { bytes: number; sha256: string }>; whole: Map<string, Buffer> }

async function readEntries(file: string): Promise<Read> {
  const read: Read = { hashes: new Map(), whole: new Map() };
  const unzip = fs.createReadStream(file).pipe(unzipParse()) as unknown as Readable;
  // unzip-stream emits 'close' before 'end': its entries are iterated through a plain object stream.
  const entries = unzip.pipe(new PassThrough({ objectMode: true }));
  unzip.on('error', (error: Error) => entries.destroy(error));
  for await (const item of entries) {
    const entry = item as Entry;
    if (entry.type === 'Directory') {
      entry.autodrain();
      continue;
    }
    const hash = createHash('sha256');
    const chunks: Buffer[] = [];
    let bytes = 0;
    for await (const chunk of entry as unknown as AsyncIterable<Buffer>) {
      hash.update(chunk);
      bytes += chunk.length;
      if (READ_WHOLE.has(entry.path)) chunks.push(chunk);
    }
    if (read.hashes.has(entry.path)) throw new Error(`the entry ${entry.path} is in the archive twice`);
    read.hashes.set(entry.path, { bytes, sha256: hash.digest('hex') });
    if (READ_WHOLE.has(entry.path)) read.whole.set(entry.path, Buffer.concat(chunks));
  }
  return read;
}

const isChained = (e: unknown): e is ChainedEvent => typeof e === 'object' && e !== null
  && EVENT_FIELDS.every((f) => (f === 'schemaVersion' ? Number.isInteger((e as Record<string, unknown>)[f]) : typeof (e as Record<string, unknown>)[f] === 'string'));

export async function verifyBundle(file: string): Promise<BundleReport> {
  const problems: BundleProblem[] = [];
  const report = (manifest: Manifest | null, checked: BundleReport['checked']): BundleReport => ({
    ok: problems.length === 0, format: manifest?.format ?? null, subject: manifest?.subject ?? null, head: manifest?.head ?? null, checked, problems: problems.slice(0, MAX_PROBLEMS),
  });
  const none = { files: 0, events: 0, signatures: 0, keptFiles: 0 };
  if (!(await isWholeZip(file))) {
    problems.push({ check: 'archive', detail: 'not a whole ZIP archive (cut off, padded or not a ZIP at all)' });
    return report(null, none);
  }
  let read: Read;
  try {
    read = await readEntries(file);
  } catch (error) {
    problems.push({ check: 'archive', detail: `the archive cannot be read: ${(error as Error).message}` });
    return report(null, none);
  }
  let manifest: Manifest;
  try {
    manifest = JSON.parse(read.whole.get(MANIFEST)?.toString('utf8') ?? 'null') as Manifest;
    if (manifest?.format !== BUNDLE_FORMAT || !Array.isArray(manifest.files)) throw new Error(`not a ${BUNDLE_FORMAT} manifest`);
  } catch (error) {
    problems.push({ check: 'manifest', path: MANIFEST, detail: `missing or unreadable: ${(error as Error).message}` });
    return report(null, none);
  }

  // Files against the manifest, and nothing beside it.
  const listed = new Set<string>();
  for (const entry of manifest.files) {
    listed.add(entry.path);
    const found = read.hashes.get(entry.path);
    if (!found) problems.push({ check: 'file', path: entry.path, detail: 'listed in the manifest but not in the archive' });
    else if (found.sha256 !== entry.sha256 || found.bytes !== entry.bytes) {
      problems.push({ check: 'file', path: entry.path, detail: `SHA-256 ${found.sha256} (${found.bytes} bytes), the manifest says ${entry.sha256} (${entry.bytes} bytes)` });
    }
  }
  for (const path of read.hashes.keys()) if (path !== MANIFEST && !listed.has(path)) problems.push({ check: 'file', path, detail: 'in the archive but not in the manifest' });

  // Events: each hash from its content and the hash before it; consecutive positions linked.
  const events: ChainedEvent[] = [];
  const lines = (read.whole.get('events.ndjson')?.toString('utf8') ?? '').split('\n').filter((l) => l !== '');
  for (const [i, line] of lines.entries()) {
    let e: unknown;
    try {
      e = JSON.parse(line);
    } catch {
      e = null;
    }
    if (!isChained(e)) {
      problems.push({ check: 'event', path: 'events.ndjson', detail: `line ${i + 1} is not an event with ${EVENT_FIELDS.join(', ')}` });
      continue;
    }
    const previous = events.at(-1);
    if (previous && BigInt(e.position) <= BigInt(previous.position)) problems.push({ check: 'event', position: e.position, detail: `out of order: after position ${previous.position}` });
    if (e.position === '1' && e.previousHash !== GENESIS_HASH) problems.push({ check: 'event', position: e.position, detail: 'the first event of the log does not start from the genesis hash' });
    if (previous && BigInt(e.position) === BigInt(previous.position) + 1n && e.previousHash !== previous.hash) {
      problems.push({ check: 'event', position: e.position, detail: `its previous hash ${e.previousHash} is not the hash of the event at ${previous.position} (${previous.hash})` });
    }
    const computed = chainHash(e.previousHash, e);
    if (computed !== e.hash) problems.push({ check: 'event', position: e.position, detail: `${e.type} on ${e.streamId}: its content gives ${computed}, not the recorded ${e.hash}: altered` });
    events.push(e);
  }
  if (manifest.events && (manifest.events.count !== events.length || manifest.events.last !== (events.at(-1)?.position ?? null))) {
    problems.push({ check: 'manifest', path: 'events.ndjson', detail: `the manifest lists ${manifest.events.count} events up to ${manifest.events.last}, the file holds ${events.length}` });
  }
  const atHead = events.find((e) => e.position === manifest.head?.position);
  if (atHead && atHead.hash !== manifest.head.hash) problems.push({ check: 'manifest', position: atHead.position, detail: 'the head\'s hash differs from the event at the head\'s position' });

  // Signatures: their events in the bundle, their content hash from the events they name.
  const byPosition = new Map(events.map((e) => [e.position, e]));
  let signatures: SignatureEvidence[] = [];
  try {
    signatures = JSON.parse(read.whole.get('signatures.json')?.toString('utf8') ?? '[]') as SignatureEvidence[];
  } catch {
    problems.push({ check: 'signature', path: 'signatures.json', detail: 'not JSON' });
  }
  for (const s of signatures) {
    const event = byPosition.get(s.position);
    const data = event?.type === 'RecordSigned' ? JSON.parse(event.data) as { signatureId: string; contentHash: string } : null;
    if (!data || data.signatureId !== s.signatureId) {
      problems.push({ check: 'signature', position: s.position, detail: `signature ${s.signatureId}: no RecordSigned event of it at that position in the bundle` });
      continue;
    }
    const content = s.contentPositions.map((p) => byPosition.get(p));
    if (content.some((e) => e === undefined)) {
      problems.push({ check: 'signature', position: s.position, detail: `signature ${s.signatureId}: events of its content are not in the bundle` });
    } else if (contentHash(content as ChainedEvent[]) !== data.contentHash) {
      if (s.contentIncluded) problems.push({ check: 'signature', position: s.position, detail: `signature ${s.signatureId}: its content gives another hash than the signed one` });
    }
  }

  // Kept files: the bytes are those their FileStored event recorded.
  let keptFiles = 0;
  for (const [path, found] of read.hashes) {
    const key = /^files\/([^/]+)\//.exec(path)?.[1];
    if (key === undefined) continue;
    keptFiles++;
    const stored = events.find((e) => e.streamId === `file-${key}` && e.type === 'FileStored');
    const sha = stored ? (JSON.parse(stored.data) as { sha256: string }).sha256 : null;
    if (sha !== found.sha256) problems.push({ check: 'file', path, detail: sha === null ? 'no FileStored event of it in the bundle' : `its SHA-256 is ${found.sha256}, its FileStored event recorded ${sha}` });
  }
  return report(manifest, { files: read.hashes.size, events: events.length, signatures: signatures.length, keptFiles });
}

/** The report as lines for a terminal (npm run verify, testament verify). */
export function describeBundleReport(file: string, r: BundleReport): string[] {
  const lines = [`bundle ${file}: ${r.format ?? 'not an evidence bundle'}`];
  if (r.subject) lines.push(`subject: ${r.subject.entity} ${r.subject.id} of project ${r.subject.projectId}; log head when made: position ${r.head?.position}, hash ${r.head?.hash}`);
  lines.push(`checked ${r.checked.files} files, ${r.checked.events} events, ${r.checked.signatures} signatures, ${r.checked.keptFiles} kept files`);
  if (r.ok) {
    lines.push('intact: every file matches the manifest, every event gives its recorded hash and links to the one before it, every signature its content hash, every kept file its recorded SHA-256');
    lines.push('to tie it to the service, compare the head with an integrity anchor or GET /api/admin/integrity');
  } else {
    lines.push(`NOT INTACT: ${r.problems.length} problem${r.problems.length === 1 ? '' : 's'}`);
    for (const p of r.problems) lines.push(`  ${p.check}${p.path ? ` ${p.path}` : ''}${p.position ? ` at position ${p.position}` : ''}: ${p.detail}`);
  }
  return lines;
}
