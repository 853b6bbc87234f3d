import { expect } from 'chai';

/**
 * An answer in the error shape (`{error, code, details}`, nothing else) with this status and
 * code, and, when given, `details.path` naming the bad input.
 */
export function expectError(res: { status: number; body: any }, status: number, code: string, path?: string): void {
  expect(res.status, JSON.stringify(res.body)).to.equal(status);
  expect(res.body).to.have.all.keys('error', 'code', 'details');
  expect(res.body.code).to.equal(code);
  expect(res.body.error).to.be.a('string');
  expect(res.body.details).to.be.an('object');
  if (path !== undefined) expect(res.body.details.path).to.equal(path);
}
