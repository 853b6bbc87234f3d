import { expect } from 'chai';
import { itInFreshProcess } from '../../support/freshProcess';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { parseJunit } from '../../../services/imports/formats/junit';
import { truncate, type ParsedCase } from '../../../services/imports/formats/parsedResult';
import { isoTimestamp, secondsToMs, TextAccumulator } from '../../../services/imports/formats/xmlStream';

const options = { fileName: 'upload.xml', maxOutputChars: 64 * 1024, onWarning: () => undefined };

async function collect(input: Readable): Promise<ParsedCase[]> {
  const cases: ParsedCase[] = [];
  for await (const c of parseJunit(input, options)) cases.push(c);
  return cases;
}
const bytes = (...chunks: Array<string | number[]>) => Readable.from(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : Buffer.from(c))));
const failure = (input: Readable) => collect(input).then(() => expect.fail('expected a ResultFileError'), (e) => e);

/** Splits a buffer into chunks of `size` bytes: cuts inside tags, entities, CDATA markers and UTF-8 sequences. */
function inChunks(buffer: Buffer, size: number): Readable {
  const chunks: Buffer[] = [];
  for (let at = 0; at < buffer.length; at += size) chunks.push(buffer.subarray(at, at + size));
  return Readable.from(chunks);
}

const minimal = '<testsuite name="s"><testcase name="t" time="1"/></testsuite>';

describe('XML result stream (untrusted uploads)', () => {
  it('refuses a DOCTYPE with an external entity before parsing it', async () => {
    const xml = '<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>\n<testsuite name="s"><testcase name="&e;"/></testsuite>';
    const err = await failure(bytes(xml));
    expect(err.code).to.equal('doctype-refused');
    expect((await failure(inChunks(Buffer.from(xml), 3))).code).to.equal('doctype-refused');
    expect((await failure(bytes('<!doctype testsuite>', minimal))).code).to.equal('doctype-refused');
  });

  it('does not mistake "<!DOCTYPE" in CDATA after the root for a declaration', async () => {
    const cases = await collect(bytes('<testsuite name="s"><testcase name="t"><system-out><![CDATA[<!DOCTYPE html><html/>]]></system-out></testcase></testsuite>'));
    expect(cases[0].systemOut).to.equal('<!DOCTYPE html><html/>');
  });

  it('refuses encodings other than UTF-8: latin-1 declaration, invalid bytes, UTF-16 with or without BOM', async () => {
    expect((await failure(bytes(`<?xml version="1.0" encoding="ISO-8859-1"?>${minimal}`))).code).to.equal('wrong-encoding');
    expect((await failure(bytes('<testsuite name="caf', [0xe9, 0x22, 0x3e], '<testcase name="t"/></testsuite>'))).code).to.equal('wrong-encoding');
    expect((await failure(bytes([0xff, 0xfe, 0x3c, 0x00]))).code).to.equal('wrong-encoding');
    expect((await failure(Readable.from([Buffer.from(minimal, 'utf16le')]))).code).to.equal('wrong-encoding');
    expect((await failure(bytes('<testsuite name="', [0xe2, 0x82]))).code).to.equal('wrong-encoding'); // truncated sequence at the end
  });

  it('accepts a UTF-8 BOM, an upper- or lower-case UTF-8 declaration, or none', async () => {
    expect(await collect(bytes([0xef, 0xbb, 0xbf], `<?xml version="1.0" encoding="UTF-8"?>${minimal}`))).to.have.length(1);
    expect(await collect(bytes(`<?xml version="1.0" encoding="utf-8"?>${minimal}`))).to.have.length(1);
    expect(await collect(bytes(minimal))).to.have.length(1);
  });

  it('reports malformed XML with its line and column', async () => {
    const err = await failure(bytes('<testsuite name="s">\n  <testcase name="t">\n</testsuite>'));
    expect(err.code).to.equal('malformed-file');
    expect(err.details).to.include({ file: 'upload.xml', line: 3 });
    expect(err.details.column).to.be.a('number');
    expect((await failure(bytes('<testsuite name="s"><testcase name="t"/>'))).code).to.equal('malformed-file'); // unclosed root
  });

  it('refuses an empty or blank file (empty-file) and a file without test cases (no-tests)', async () => {
    expect((await failure(bytes(''))).code).to.equal('empty-file');
    expect((await failure(Readable.from([]))).code).to.equal('empty-file');
    expect((await failure(bytes(' \n\t ', [0xef, 0xbb, 0xbf].map(() => 0x20)))).code).to.equal('empty-file');
    expect((await failure(bytes('<testsuites/>'))).code).to.equal('no-tests');
  });

  it('parses identically when fed in tiny chunks', async () => {
    for (const name of ['junit-surefire.xml', 'junit-pytest.xml', 'junit-nested.xml']) {
      const file = readFileSync(join(__dirname, '..', 'fixtures', name));
      const whole = await collect(Readable.from([file]));
      for (const size of [1, 7]) expect(await collect(inChunks(file, size)), `${name} in ${size}-byte chunks`).to.deep.equal(whole);
    }
    const multiByte = Buffer.from('<testsuite name="Größe 数"><testcase name="ünïcode ✓ 😀"><system-out>a&amp;b &#x263A; 😀</system-out></testcase></testsuite>');
    const [c] = await collect(inChunks(multiByte, 1));
    expect(c).to.include({ name: 'ünïcode ✓ 😀', systemOut: 'a&b ☺ 😀' });
    expect(c.suitePath).to.deep.equal(['Größe 数']);
  });

  it('cuts text as truncate() would, without holding the whole text', () => {
    const acc = new TextAccumulator(1000);
    const whole = 'x'.repeat(300) + 'y'.repeat(50_000);
    for (let at = 0; at < whole.length; at += 777) acc.append(whole.slice(at, at + 777));
    expect(acc.value()).to.equal(truncate(whole, 1000));
    expect(acc.length).to.equal(whole.length);
  });

  it('converts seconds and timestamps', () => {
    expect([secondsToMs('1.5'), secondsToMs('0.0145'), secondsToMs('1,234.5'), secondsToMs('0,25'), secondsToMs(''), secondsToMs(undefined), secondsToMs('1.5E-3'), secondsToMs('soon')])
      .to.deep.equal([1500, 15, 1_234_500, 250, null, null, 2, undefined]);
    expect([
      isoTimestamp('2024-01-15T10:30:00'), isoTimestamp('2024-01-15 10:30:00Z'), isoTimestamp('2024-01-15T10:30:00.1234567+01:00'),
      isoTimestamp('2024-01-15T10:30:00 CET'), isoTimestamp('2024-01-15T10:30:00 IST'), isoTimestamp('yesterday'), isoTimestamp(''),
    ]).to.deep.equal(['2024-01-15T10:30:00.000Z', '2024-01-15T10:30:00.000Z', '2024-01-15T09:30:00.123Z', '2024-01-15T09:30:00.000Z', undefined, undefined, null]);
  });

  itInFreshProcess('does not hold an 80 MB CDATA system-out (saxes buffers it whole unless drained): rss rises less than 150 MB', __filename, async function () {
    this.timeout(120_000);
    const block = Buffer.from('x'.repeat(64 * 1024 - 1) + '\n');
    const source = Readable.from((function* () {
      yield Buffer.from('<testsuite name="s"><testcase name="big"><system-out><![CDATA[');
      for (let i = 0; i < 80 * 16; i++) yield block;
      yield Buffer.from(']]></system-out></testcase></testsuite>');
    })());
    const before = process.memoryUsage().rss;
    let peak = before;
    const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
    const cases: ParsedCase[] = [];
    try {
      for await (const c of parseJunit(source, { ...options, maxOutputChars: 1000 })) cases.push(c);
    } finally {
      clearInterval(timer);
    }
    peak = Math.max(peak, process.memoryUsage().rss);
    expect(cases[0].systemOut).to.equal(`${'x'.repeat(1000)}\n[… ${80 * 1024 * 1024 - 1000} more characters cut]`);
    if (process.env.SHOW_RSS) console.log('rss rise MB', (peak - before) / 1048576);
    expect((peak - before) / (1024 * 1024), 'rss rise in MB').to.be.lessThan(150);
  });

  itInFreshProcess('streams a ~100 MB file (one case with a 20 MB system-out) with the resident memory rising less than 150 MB', __filename, async function () {
    this.timeout(120_000);
    const caseCount = 520_000;
    const bigOutput = 20 * 1024 * 1024;
    const line = 'log line with some text to make the output look like real output 0123456789\n';
    function* generate(): Generator<Buffer> {
      yield Buffer.from('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites><testsuite name="load" timestamp="2024-01-15T10:30:00">\n');
      for (let i = 0; i < caseCount; i++) {
        if (i === 1000) {
          yield Buffer.from(`<testcase name="huge" classname="Load" time="1"><system-out><![CDATA[`);
          const block = Buffer.from(line.repeat(Math.ceil(65536 / line.length)));
          for (let written = 0; written < bigOutput; written += block.length) yield block;
          yield Buffer.from(']]></system-out><system-err>');
          const escaped = Buffer.from('&lt;err&gt; '.repeat(5000));
          for (let written = 0; written < bigOutput / 4; written += escaped.length) yield escaped;
          yield Buffer.from('</system-err></testcase>\n');
          continue;
        }
        yield Buffer.from(`<testcase name="case ${i}" classname="com.example.Load${i % 100}" time="0.00${i % 10}"><properties><property name="i" value="${i}"/></properties>${i % 50 === 0 ? '<failure message="nope" type="AssertionError">at Load.run(Load.java:1)</failure>' : ''}</testcase>\n`);
      }
      yield Buffer.from('</testsuite></testsuites>\n');
    }
    let generatedBytes = 0;
    // In 64 KiB chunks, as a file or an upload arrives.
    const source = Readable.from((function* () {
      let pending: Buffer[] = [];
      let pendingBytes = 0;
      for (const piece of generate()) {
        pending.push(piece);
        pendingBytes += piece.length;
        if (pendingBytes < 64 * 1024) continue;
        generatedBytes += pendingBytes;
        yield Buffer.concat(pending);
        pending = [];
        pendingBytes = 0;
      }
      generatedBytes += pendingBytes;
      yield Buffer.concat(pending);
    })(), { objectMode: false });

    global.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    let count = 0;
    let huge: ParsedCase | null = null;
    for await (const c of parseJunit(source, { ...options, maxOutputChars: 10_000 })) {
      count++;
      if (c.name === 'huge') huge = c;
      if (count % 5000 === 0) peak = Math.max(peak, process.memoryUsage().rss);
    }
    peak = Math.max(peak, process.memoryUsage().rss);

    expect(generatedBytes).to.be.greaterThan(95 * 1024 * 1024);
    expect(count).to.equal(caseCount);
    expect(huge?.systemOut).to.have.length.lessThan(10_100);
    expect(huge?.systemOut).to.match(/more characters cut\]$/);
    expect(huge?.systemErr?.startsWith('<err> <err>')).to.equal(true);
    if (process.env.SHOW_RSS) console.log('rss rise MB', (peak - before) / 1048576);
    expect((peak - before) / (1024 * 1024), 'rss rise in MB').to.be.lessThan(150);
  });
});

describe('XML result stream: what real files hold', () => {
  it('reads year 1 (.NET "no time") as no time, RFC 1123 dates and US zone abbreviations', () => {
    expect([
      isoTimestamp('0001-01-01T00:00:00'), isoTimestamp('0001-01-01T00:00:00.0000000+00:00'), isoTimestamp('Tue, 05 Mar 2024 10:15:30 GMT'),
      isoTimestamp('05 Mar 2024 10:15:30 +0100'), isoTimestamp('2024-03-05T10:15:30 EST'), isoTimestamp('2024-03-05 10:15:30 CST'),
      isoTimestamp('2024-07-05T10:15:30 PDT'), isoTimestamp('2024-03-05T10:15:30 UTC'), isoTimestamp('2024-02-30T10:00:00'), isoTimestamp('Tue, 05 Foo 2024 10:15:30 GMT'),
    ]).to.deep.equal([
      null, null, '2024-03-05T10:15:30.000Z', '2024-03-05T09:15:30.000Z', '2024-03-05T15:15:30.000Z', '2024-03-05T16:15:30.000Z',
      '2024-07-05T17:15:30.000Z', '2024-03-05T10:15:30.000Z', undefined, undefined,
    ]);
  });

  it('a year-1 suite timestamp gives no execution time and no warning', async () => {
    const warnings: unknown[] = [];
    const cases: ParsedCase[] = [];
    const xml = '<testsuite name="s" timestamp="0001-01-01T00:00:00"><testcase name="t"/></testsuite>';
    for await (const c of parseJunit(bytes(xml), { ...options, onWarning: (w) => warnings.push(w) })) cases.push(c);
    expect(cases[0].executedAt).to.equal(null);
    expect(warnings).to.deep.equal([]);
  });

  it('a UTF-8 file with a BOM and a NUL says where the NUL is (wrong-encoding), not that it may be UTF-16', async () => {
    const err = await failure(bytes([0xef, 0xbb, 0xbf], '<testsuite name="s">\n<testcase name="t">\n<system-out>a', [0x00], 'b</system-out></testcase></testsuite>'));
    expect(err.code).to.equal('wrong-encoding');
    expect(err.message).to.equal('upload.xml contains the NUL character U+0000 (NUL) at byte offset 57 (line 3); XML does not allow it anywhere');
    expect(err.message).not.to.include('UTF-16');
    expect(err.details).to.deep.equal({ file: 'upload.xml', byte: 57, line: 3, character: 'U+0000' });
  });

  it('another control character (ESC of a colour code) is named with its place (malformed-file); UTF-16 without a BOM still gets the hint', async () => {
    const esc = await failure(bytes('<testsuite name="s"><testcase name="t"><failure message="', [0x1b], '[31mred"/></testcase></testsuite>'));
    expect(esc.code).to.equal('malformed-file');
    expect(esc.message).to.equal('upload.xml is not valid XML: it contains the control character U+001B (ESC) at byte offset 57 (line 1); XML allows none but tab, line feed and carriage return');
    const utf16 = await failure(Readable.from([Buffer.from(minimal, 'utf16le')]));
    expect(utf16.code).to.equal('wrong-encoding');
    expect(utf16.message).to.include('UTF-16 or UTF-32 without a byte order mark?');
  });
});
