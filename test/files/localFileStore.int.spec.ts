import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { expect } from 'chai';
import pino from 'pino';
import { LocalFileStore, openLocalFileStore } from '../../infra/files/localFileStore';
import { FileTooLargeError, newFileKey } from '../../services/files/fileStore';

const sha256 = (content: string | Buffer) => createHash('sha256').update(content).digest('hex');
const logger = pino({ level: 'silent' });
const meta = { name: 'a.txt', mimeType: 'text/plain' };
const read = async (stream: Readable) => {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
};

/** A process id no process has now (a child that has exited). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '0']);
  return child.pid!;
}

describe('LocalFileStore (a real directory)', () => {
  let dir: string;
  let store: LocalFileStore;
  const entries = () => fs.readdirSync(dir).sort();
  const temporary = () => entries().filter((n) => n.startsWith('.upload-'));

  beforeEach(async () => {
    dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'testament-store-')), 'uploads');
    store = await openLocalFileStore({ dir, logger });
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(path.dirname(dir), { recursive: true, force: true });
  });

  it('creates its directory, stages under a temporary name and shows the file under its key only on commit', async () => {
    expect(fs.statSync(dir).isDirectory()).to.equal(true);
    const staged = await store.stage(Readable.from([Buffer.from('hello '), Buffer.from('world')]), { maxBytes: 100 });
    expect(staged).to.include({ sha256: sha256('hello world'), size: 11 });
    expect(entries()).to.deep.equal([path.basename(staged.ref)]);
    const key = newFileKey();
    expect(await store.stat(key)).to.equal(null);

    const stored = await store.commit(staged, key, meta);
    expect(stored).to.deep.equal({ key, sha256: sha256('hello world'), size: 11, ...meta });
    expect(entries()).to.deep.equal([key, `${key}.meta.json`]);
    expect(await store.stat(key)).to.deep.equal(stored);
    const opened = await store.open(key);
    expect(opened!.file).to.deep.equal(stored);
    expect((await read(opened!.content)).toString()).to.equal('hello world');
  });

  it('keeps each upload of the same content under its own key, with its own name and type', async () => {
    const first = await store.put(Readable.from(['same']), newFileKey(), { name: 'first.txt', mimeType: 'text/plain' }, { maxBytes: 10 });
    const second = await store.put(Readable.from(['same']), newFileKey(), { name: 'second.md', mimeType: 'text/markdown' }, { maxBytes: 10 });
    expect(second.key).to.not.equal(first.key);
    expect(await store.stat(first.key)).to.include({ name: 'first.txt', mimeType: 'text/plain', sha256: sha256('same') });
    expect(await store.stat(second.key)).to.include({ name: 'second.md', mimeType: 'text/markdown', sha256: sha256('same') });
    expect(entries()).to.deep.equal([first.key, `${first.key}.meta.json`, second.key, `${second.key}.meta.json`].sort());
  });

  it('never overwrites a key that holds a file', async () => {
    const key = newFileKey();
    await store.put(Readable.from(['first']), key, meta, { maxBytes: 10 });
    await store.put(Readable.from(['second']), key, meta, { maxBytes: 10 }).then(() => expect.fail('should fail'), (e: Error) => expect(e.message).to.match(/stored under/));
    expect((await read((await store.open(key))!.content)).toString()).to.equal('first');
    expect(temporary()).to.deep.equal([]);
  });

  it('removes a file and its metadata, and removing it again (or a key that holds nothing) is no error', async () => {
    const kept = await store.put(Readable.from(['kept']), newFileKey(), meta, { maxBytes: 10 });
    const gone = await store.put(Readable.from(['gone']), newFileKey(), meta, { maxBytes: 10 });
    await store.remove(gone.key);
    await store.remove(gone.key);
    await store.remove('0'.repeat(64));
    await store.remove('../secret');
    expect(await store.open(gone.key)).to.equal(null);
    expect(entries()).to.deep.equal([kept.key, `${kept.key}.meta.json`].sort());
  });

  it('stores uploads arriving concurrently each under its key, content intact', async () => {
    const content = Buffer.alloc(256 * 1024, 5);
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) =>
      store.put(Readable.from([content.subarray(0, 100_000), content.subarray(100_000)]), newFileKey(), { name: `${i}.bin`, mimeType: 'application/octet-stream' }, { maxBytes: content.length })));
    expect(new Set(results.map((r) => r.key)).size).to.equal(10);
    for (const r of results) expect(fs.readFileSync(path.join(dir, r.key)).equals(content)).to.equal(true);
    expect(temporary()).to.deep.equal([]);
  });

  it('refuses content over the limit with FileTooLargeError, leaves nothing, and drains the source', async () => {
    const source = Readable.from([Buffer.alloc(60), Buffer.alloc(60), Buffer.alloc(60)]);
    let error: unknown;
    await store.stage(source, { maxBytes: 100 }).catch((e) => (error = e));
    expect(error).to.be.instanceOf(FileTooLargeError);
    expect((error as FileTooLargeError).limit).to.equal(100);
    expect(entries()).to.deep.equal([]);
    await new Promise((resolve) => (source.readableEnded ? resolve(null) : source.once('end', resolve)));
    expect(source.readableEnded, 'drained to its end').to.equal(true);
    expect((await store.stage(Readable.from([Buffer.alloc(100)]), { maxBytes: 100 })).size).to.equal(100);
  });

  it('a source that fails midway, or before the temporary file exists, leaves nothing', async () => {
    const midway = new PassThrough();
    const staging = store.stage(midway, { maxBytes: 1000 });
    midway.write('partial');
    await new Promise((resolve) => setImmediate(resolve));
    midway.destroy(new Error('connection reset'));
    await staging.then(() => expect.fail('should fail'), (e: Error) => expect(e.message).to.equal('connection reset'));

    const early = new PassThrough();
    const failing = store.stage(early, { maxBytes: 1000 }); // fails while the file is being opened
    early.destroy(new Error('gone at once'));
    await failing.then(() => expect.fail('should fail'), (e: Error) => expect(e.message).to.equal('gone at once'));

    const closed = new PassThrough();
    const closing = store.stage(closed, { maxBytes: 1000 });
    closed.write('some');
    closed.destroy(); // closed without an error and without an end
    await closing.then(() => expect.fail('should fail'), (e: Error) => expect(e.message).to.match(/interrupted/));
    expect(entries()).to.deep.equal([]);
  });

  it('discard removes a staged file, and is idempotent', async () => {
    const staged = await store.stage(Readable.from(['x']), { maxBytes: 10 });
    await store.discard(staged);
    await store.discard(staged);
    expect(entries()).to.deep.equal([]);
  });

  it('refuses to commit or discard anything it did not stage', async () => {
    const outside = path.join(path.dirname(dir), 'victim.txt');
    fs.writeFileSync(outside, 'keep me');
    for (const ref of [outside, path.join(dir, '..', 'victim.txt'), path.join(dir, 'a'.repeat(64))]) {
      const forged = { sha256: 'a'.repeat(64), size: 7, ref };
      await store.commit(forged, newFileKey(), meta).then(() => expect.fail(ref), (e: Error) => expect(e.message).to.match(/not a file staged/i));
      await store.discard(forged).then(() => expect.fail(ref), (e: Error) => expect(e.message).to.match(/not a file staged/i));
    }
    expect(fs.readFileSync(outside, 'utf8')).to.equal('keep me');
  });

  it('answers null for malformed and unknown keys, never reaching outside its directory', async () => {
    fs.writeFileSync(path.join(path.dirname(dir), 'secret'), 'outside');
    for (const key of ['../secret', 'A'.repeat(64), 'a'.repeat(63), `${'a'.repeat(64)}.meta.json`, '0'.repeat(64)]) {
      expect(await store.stat(key), key).to.equal(null);
      expect(await store.open(key), key).to.equal(null);
    }
  });

  it('serves content without (or with unreadable) metadata as application/octet-stream named by its key', async () => {
    const stored = await store.put(Readable.from(['bare']), newFileKey(), meta, { maxBytes: 10 });
    fs.rmSync(path.join(dir, `${stored.key}.meta.json`));
    expect(await store.stat(stored.key)).to.include({ name: stored.key, mimeType: 'application/octet-stream', size: 4 });
    fs.writeFileSync(path.join(dir, `${stored.key}.meta.json`), '{not json');
    expect(await store.stat(stored.key)).to.include({ mimeType: 'application/octet-stream' });
  });

  it('reads a file stored under its SHA-256 before keys were per upload (its sidecar has no sha256)', async () => {
    const key = sha256('legacy');
    fs.writeFileSync(path.join(dir, key), 'legacy');
    fs.writeFileSync(path.join(dir, `${key}.meta.json`), JSON.stringify({ name: 'old.txt', mimeType: 'text/plain' }));
    expect(await store.stat(key)).to.deep.equal({ key, sha256: key, size: 6, name: 'old.txt', mimeType: 'text/plain' });
  });

  it('metadata left by a crash between the two renames is replaced when the content arrives', async () => {
    const key = newFileKey();
    fs.writeFileSync(path.join(dir, `${key}.meta.json`), JSON.stringify({ name: 'crashed.txt', mimeType: 'text/x-crash' }));
    expect(await store.stat(key)).to.equal(null);
    expect(await store.put(Readable.from(['late']), key, { name: 'late.txt', mimeType: 'text/plain' }, { maxBytes: 10 })).to.include({ name: 'late.txt', mimeType: 'text/plain' });
    expect(await store.stat(key)).to.include({ name: 'late.txt' });
  });

  it('at start, removes the temporary files of writers gone (what a crash left) and stale ones, not one a running process is writing, and nothing else', async () => {
    await store.close();
    const gone = path.join(dir, '.upload-00000000-0000-4000-8000-000000000001.tmp'); // an older version's name: its writer is gone
    const host = createHash('sha256').update(os.hostname()).digest('hex').slice(0, 8);
    const crashed = path.join(dir, `.upload-${host}-${deadPid()}-00000000-0000-4000-8000-000000000005.tmp`);
    const live = path.join(dir, `.upload-${host}-${process.ppid}-00000000-0000-4000-8000-000000000006.tmp`); // another process of the installation, mid-upload
    // Another container's process: not judged from here, whatever its pid.
    const elsewhere = path.join(dir, `.upload-0badc0de-${deadPid()}-00000000-0000-4000-8000-000000000007.tmp`);
    const stale = path.join(dir, `.upload-${host}-${process.ppid}-00000000-0000-4000-8000-000000000002.tmp`);
    const lookalike = path.join(dir, '.upload-not-a-uuid.tmp');
    for (const f of [gone, crashed, live, elsewhere, stale, lookalike]) fs.writeFileSync(f, 'half an upload');
    const hourAgo = new Date(Date.now() - 60 * 60 * 1000);
    fs.utimesSync(stale, hourAgo, hourAgo);
    const kept = await store.put(Readable.from(['kept']), newFileKey(), meta, { maxBytes: 10 });

    store = await openLocalFileStore({ dir, logger });
    expect(entries()).to.deep.equal([path.basename(live), path.basename(elsewhere), path.basename(lookalike), kept.key, `${kept.key}.meta.json`].sort());
  });

  it('while running, sweeps only temporary files untouched for the grace period', async () => {
    const fresh = path.join(dir, '.upload-00000000-0000-4000-8000-000000000003.tmp');
    const stale = path.join(dir, '.upload-00000000-0000-4000-8000-000000000004.tmp');
    for (const f of [fresh, stale]) fs.writeFileSync(f, 'in flight?');
    const hourAgo = new Date(Date.now() - 60 * 60 * 1000);
    fs.utimesSync(stale, hourAgo, hourAgo);
    expect(await store.sweep(10 * 60 * 1000)).to.equal(1);
    expect(temporary()).to.deep.equal([path.basename(fresh)]);
  });
});
