import { createHash } from 'node:crypto';
import { Transform, type Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import yazl from 'yazl';
import type { FileStore } from '../files/fileStore';
import { BUNDLE_FORMAT, MANIFEST, type Manifest, type ManifestEntry } from '../shared/evidenceBundle';
import type { Evidence } from './collect';

/**
 * An evidence bundle as a ZIP (docs/compliance.md): events.ndjson (the events with their chain
 * hashes), the records folded from them, signatures.json, the files kept, README.txt, and last
 * manifest.json with SHA-256 of every other entry. Written as it streams: a file's hash is known
 * once its bytes went out, the manifest after all of them.
 */

const README = `Testament evidence bundle (${BUNDLE_FORMAT})

manifest.json     SHA-256 of every other file in this bundle, the subject and the log's head when it was made
events.ndjson     the events behind the subject, one JSON object per line, in the order of the log, each with
                  its chain hash and the hash of the event before it; data and metadata are PostgreSQL jsonb text
runs/<id>.json    each run, its run cases and results (each with the case as it was when the result was recorded),
milestone.json    folded from the events above
signatures.json   the signatures: which events each one's content hash covers, and whether it is revoked
files/<key>/...   result files of its imports and attachments; their SHA-256 is in their FileStored events

Check it offline: \`npm run verify -- <this file>\` in a Testament checkout, or \`testament verify <this file>\`.
Each event's hash is SHA-256(previous hash || content), the content as docs/compliance.md describes.
`;

/** A name safe as one ZIP path segment. */
const segment = (name: string) => name.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^\.+/, '_').slice(0, 120) || 'file';

export async function writeEvidenceZip(evidence: Evidence, out: Writable, deps: { files: FileStore; generatedAt: Date; generatedBy: { userId: number; name: string } }): Promise<Manifest> {
  const zip = new yazl.ZipFile();
  const entries: Promise<ManifestEntry>[] = [];
  const options = { mtime: deps.generatedAt };
  zip.outputStream.pipe(out);
  const addBuffer = (path: string, content: Buffer) => {
    zip.addBuffer(content, path, options);
    entries.push(Promise.resolve({ path, bytes: content.length, sha256: createHash('sha256').update(content).digest('hex') }));
  };
  const json = (value: unknown) => Buffer.from(`${JSON.stringify(value, null, 2)}\n`);

  addBuffer('README.txt', Buffer.from(README));
  addBuffer('events.ndjson', Buffer.from(evidence.events.map((e) => `${JSON.stringify(e)}\n`).join('')));
  for (const doc of evidence.documents) addBuffer(doc.path, json(doc.value));
  addBuffer('signatures.json', json(evidence.signatures));
  for (const file of evidence.files) {
    const opened = await deps.files.open(file.key);
    if (!opened) continue; // gone from the store (its FileDeleted may be newer than the bundle's head): listed in no entry
    const path = `files/${file.key}/${segment(file.name)}`;
    const hash = createHash('sha256');
    let bytes = 0;
    // Hashed on its way into the ZIP (a listener of its own would make it flow before the ZIP reads it).
    const through = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        hash.update(chunk);
        bytes += chunk.length;
        callback(null, chunk);
      },
    });
    const done = finished(through).then(() => ({ path, bytes, sha256: hash.digest('hex') }));
    opened.content.on('error', (err) => through.destroy(err));
    opened.content.pipe(through);
    zip.addReadStream(through, path, options);
    entries.push(done);
  }
  const manifest: Manifest = {
    format: BUNDLE_FORMAT, generatedAt: deps.generatedAt.toISOString(), generatedBy: deps.generatedBy, subject: evidence.subject, head: evidence.head,
    events: { count: evidence.events.length, first: evidence.events[0]?.position ?? null, last: evidence.events.at(-1)?.position ?? null },
    files: await Promise.all(entries),
  };
  zip.addBuffer(json(manifest), MANIFEST, options);
  zip.end();
  await finished(out);
  return manifest;
}
