import { expect } from 'chai';
import { normaliseMimeType, sanitiseFileName } from '../../services/files/fileMeta';
import { isFileKey } from '../../services/files/fileStore';

describe('file metadata from the client', () => {
  describe('sanitiseFileName', () => {
    const cases: [string | undefined, string][] = [
      ['report.pdf', 'report.pdf'],
      ['../../etc/passwd', 'passwd'],
      ['C:\\Users\\me\\Desktop\\notes.txt', 'notes.txt'],
      ['dir/sub/', 'file'],
      ['..', 'file'],
      ['...', 'file'],
      ['', 'file'],
      [undefined, 'file'],
      ['  spaced name.txt  ', 'spaced name.txt'],
      ['tab\there\nnewline\u0000nul.txt', 'tabherenewlinenul.txt'],
      ['invoice\u202Efdp.exe', 'invoicefdp.exe'],
      ['a<b>c:d"e|f?g*h.txt', 'a_b_c_d_e_f_g_h.txt'],
      ['Prüfbericht ✓.pdf', 'Prüfbericht ✓.pdf'],
      ['e\u0301te\u0301.txt', 'été.txt'], // NFC
    ];
    for (const [raw, expected] of cases) it(`${JSON.stringify(raw)} → ${JSON.stringify(expected)}`, () => expect(sanitiseFileName(raw)).to.equal(expected));

    it('cuts a long name to 255 UTF-8 bytes, keeping the extension and whole characters', () => {
      const long = `${'ä'.repeat(300)}.tar`;
      const cut = sanitiseFileName(long);
      expect(Buffer.byteLength(cut)).to.be.at.most(255);
      expect(cut.endsWith('.tar')).to.equal(true);
      expect(cut).to.equal(`${'ä'.repeat(125)}.tar`);
      expect(sanitiseFileName('x'.repeat(400))).to.equal('x'.repeat(255));
    });
  });

  describe('normaliseMimeType', () => {
    const cases: [string | undefined, string][] = [
      ['text/plain', 'text/plain'],
      ['Application/JSON; charset=UTF-8', 'application/json'],
      ['image/svg+xml', 'image/svg+xml'],
      ['application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'],
      ['text/html\r\nX-Injected: 1', 'application/octet-stream'],
      ['no-slash', 'application/octet-stream'],
      ['a/b/c', 'application/octet-stream'],
      ['', 'application/octet-stream'],
      [undefined, 'application/octet-stream'],
    ];
    for (const [raw, expected] of cases) it(`${JSON.stringify(raw)} → ${expected}`, () => expect(normaliseMimeType(raw)).to.equal(expected));
  });

  it('a key is 64 lower-case hex digits and nothing else', () => {
    const key = 'a'.repeat(64);
    expect(isFileKey(key)).to.equal(true);
    for (const bad of [key.toUpperCase(), key.slice(1), `${key}\n`, `../${key}`, `${key}.meta.json`, 'g'.repeat(64), 42, null]) expect(isFileKey(bad), String(bad)).to.equal(false);
  });
});
