import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { detectFormat, readHead } from '../../../services/imports/formats/detect';
import { detectFormats } from '../../../services/imports/formats/index';
import { ResultFileError } from '../../../services/imports/formats/parsedResult';
import { fixture } from './jsonFormats.helpers';

const XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n';
const detect = (head: string | Buffer, name = 'results.xml') => detectFormat(typeof head === 'string' ? Buffer.from(head) : head, name);

describe('detectFormat', () => {
  describe('XML, by root element', () => {
    it('JUnit: <testsuites> or <testsuite>', () => {
      expect(detect(`${XML_DECLARATION}<testsuites name="unit" tests="3" failures="1">\n  <testsuite name="a">`)).to.equal('junit');
      expect(detect('<testsuite name="com.example.CartTest" tests="2" time="0.31">')).to.equal('junit');
    });

    it('TestNG: <testng-results>', () => {
      expect(detect(`${XML_DECLARATION}<testng-results ignored="0" total="4" passed="3" failed="1" skipped="0">`)).to.equal('testng');
    });

    it('NUnit: <test-run> (NUnit 3) or <test-results> (NUnit 2)', () => {
      expect(detect(`${XML_DECLARATION}<test-run id="0" runstate="Runnable" testcasecount="12" result="Failed">`)).to.equal('nunit');
      expect(detect(`${XML_DECLARATION}<!--This file represents the results of running a test suite-->\n<test-results name="Tests.dll" total="5">`)).to.equal('nunit');
    });

    it('xUnit.net: <assemblies> or <assembly>', () => {
      expect(detect(`${XML_DECLARATION}<assemblies timestamp="03/04/2024 10:15:30">\n  <assembly name="Tests.dll">`)).to.equal('xunit');
      expect(detect('<assembly name="/src/Tests/bin/Tests.dll" run-date="2024-03-04" total="3">')).to.equal('xunit');
    });

    it('MSTest: <TestRun> in the TeamTest namespace, or a .trx file', () => {
      const teamTest = '<TestRun id="4c0b1a0e-1d2f-4e3a-9b8c-7d6e5f4a3b2c" name="ci@build 2024-03-04" xmlns="http://microsoft.com/schemas/VisualStudio/TeamTest/2010">';
      expect(detect(`\uFEFF${XML_DECLARATION}${teamTest}`, 'results.xml')).to.equal('mstest');
      expect(detect('<TestRun id="1" name="run">', 'results.xml')).to.equal(null);
      expect(detect('<TestRun id="1" name="run">', 'ci_build_2024-03-04.trx')).to.equal('mstest');
      expect(detect('not XML at all', 'RESULTS.TRX')).to.equal('mstest');
      expect(detect('<testsuites>', 'mislabelled.trx')).to.equal('junit'); // content recognised: it wins over the name
    });

    it('skips a byte-order mark, comments, processing instructions and a DOCTYPE before the root', () => {
      const head =
        '\uFEFF  \n<?xml version="1.0"?>\n<!-- made by <testng-results> converter -->\n<?xml-stylesheet href="r.xsl"?>\n' +
        '<!DOCTYPE testsuites [ <!ENTITY e "<test-run>"> ]>\n<testsuites>';
      expect(detect(head)).to.equal('junit');
    });

    it('goes by the root element, not by a name found further in', () => {
      expect(detect('<report><testsuite name="a"/></report>')).to.equal(null);
      expect(detect('<testsuites><!-- <testng-results> --><testsuite name="a"/></testsuites>')).to.equal('junit');
      expect(detect('<ns2:testsuites xmlns:ns2="urn:x">')).to.equal('junit');
    });

    it('reads a UTF-16 file by its byte-order mark', () => {
      const utf16le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(`${XML_DECLARATION}<testsuites>`, 'utf16le')]);
      expect(detect(utf16le)).to.equal('junit');
    });
  });

  describe('JSON, by keys in the head', () => {
    it('Cucumber: an array whose first feature has elements, keyword or uri', () => {
      expect(detect(fixture('cucumber-js.json'), 'cucumber.json')).to.equal('cucumber');
      expect(detect(fixture('cucumber-jvm.json'), 'cucumber.json')).to.equal('cucumber');
      expect(detect(fixture('cucumber-jvm.json').subarray(0, 40), 'cucumber.json')).to.equal('cucumber'); // `[ { "line": 1, "elements": [`
      expect(detect(' [ ] ', 'cucumber.json')).to.equal('cucumber'); // no feature ran
    });

    it('Mocha: an object with stats and tests, passes, failures or results', () => {
      expect(detect(fixture('mocha-spec.json'), 'mocha.json')).to.equal('mocha');
      expect(detect(fixture('mocha-mochawesome.json'), 'mochawesome.json')).to.equal('mocha');
      expect(detect('{"stats":{"tests":1},"passes":[{"title":"a"', 'm.json')).to.equal('mocha');
    });

    it('other JSON is nothing', () => {
      expect(detect('[1, 2, 3]', 'a.json')).to.equal(null);
      expect(detect('[{"title": "a", "data": {"uri": "x", "elements": []}}]', 'a.json')).to.equal(null); // keys nested deeper
      expect(detect('{"stats": {"tests": 3}}', 'a.json')).to.equal(null);
      expect(detect('{"tests": [], "passes": []}', 'a.json')).to.equal(null);
      expect(detect('{"report": {"stats": {}, "tests": []}}', 'a.json')).to.equal(null);
    });
  });

  it('text, binary and empty heads are nothing', () => {
    expect(detect('Tests run: 3, Failures: 1', 'surefire.txt')).to.equal(null);
    expect(detect(Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00]), 'results.zip')).to.equal(null);
    expect(detect('', 'empty.xml')).to.equal(null);
  });
});

describe('readHead', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'detect-head-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('reads the first bytes, or the whole of a shorter file', async () => {
    await writeFile(join(dir, 'a.txt'), 'x'.repeat(100));
    expect((await readHead(join(dir, 'a.txt'), 10)).toString()).to.equal('x'.repeat(10));
    expect((await readHead(join(dir, 'a.txt'))).length).to.equal(100);
  });
});

describe('detectFormats', () => {
  let dir: string;
  const file = async (name: string, content: string | Buffer) => {
    const path = join(dir, name);
    await writeFile(path, content);
    return { path, originalName: name };
  };
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'detect-formats-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  async function refusal(promise: Promise<unknown>): Promise<ResultFileError> {
    try {
      await promise;
    } catch (error) {
      expect(error).to.be.instanceOf(ResultFileError);
      return error as ResultFileError;
    }
    return expect.fail('expected a ResultFileError');
  }

  it('auto: the one format all files are in', async () => {
    const files = [await file('a.xml', '<testsuite name="a">'), await file('b.xml', `${XML_DECLARATION}<testsuites>`)];
    expect(await detectFormats(files, 'auto')).to.equal('junit');
    expect(await detectFormats([await file('m.json', fixture('mocha-spec.json'))], 'auto')).to.equal('mocha');
  });

  it('auto: files in different formats are refused, each file with its format', async () => {
    const files = [await file('unit.xml', '<testsuites>'), await file('e2e.json', fixture('mocha-spec.json')), await file('x.xml', '<testsuite>')];
    const error = await refusal(detectFormats(files, 'auto'));
    expect(error.code).to.equal('mixed-formats');
    expect(error.details).to.deep.equal({ formats: { 'unit.xml': 'junit', 'e2e.json': 'mocha', 'x.xml': 'junit' } });
  });

  it('auto: a file in no known format is refused by name', async () => {
    const files = [await file('unit.xml', '<testsuites>'), await file('notes.txt', 'all green')];
    const error = await refusal(detectFormats(files, 'auto'));
    expect(error.code).to.equal('unknown-format');
    expect(error.details).to.include({ file: 'notes.txt' });
  });

  it('auto: an empty file is refused as empty', async () => {
    const error = await refusal(detectFormats([await file('blank.xml', '\uFEFF \n')], 'auto'));
    expect(error.code).to.equal('empty-file');
  });

  it('a requested format is taken as given, without reading the files', async () => {
    expect(await detectFormats([{ path: join(dir, 'missing.xml'), originalName: 'missing.xml' }], 'nunit')).to.equal('nunit');
  });
});
