import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { rootCertificates } from 'node:tls';
import { expect } from 'chai';
import { trustedCa } from '../../../infra/search/documentEngine';

/** The CA the OpenSearch and Elasticsearch clients trust (infra/search/documentEngine.ts). */
describe('trustedCa: the search clients\' CA', () => {
  let dir: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-ca-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('the PEM text given, else the certificate file sslCaPath names, else none', () => {
    const pem = rootCertificates[0];
    const file = path.join(dir, 'ca.pem');
    fs.writeFileSync(file, pem);
    expect(trustedCa({ sslCa: pem, sslCaPath: file })).to.deep.equal({ ca: pem });
    expect(trustedCa({ sslCa: null, sslCaPath: file }).ca?.toString()).to.equal(pem);
    expect(trustedCa({ sslCa: null, sslCaPath: null })).to.deep.equal({});
  });

  it('a file missing, a directory, or not a certificate: "sslCaPath is not readable", the cause kept for the log only', () => {
    const notPem = path.join(dir, 'notes.txt');
    fs.writeFileSync(notPem, 'root:x:0:0:root:/root:/bin/bash\n');
    for (const sslCaPath of [path.join(dir, 'missing.pem'), dir, notPem]) {
      let error: Error | undefined;
      try {
        trustedCa({ sslCa: null, sslCaPath });
      } catch (err) {
        error = err as Error;
      }
      expect(error?.message, sslCaPath).to.equal('sslCaPath is not readable');
      expect(error?.cause, sslCaPath).to.be.an('error');
    }
  });
});
