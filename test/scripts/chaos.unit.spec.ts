import { expect } from 'chai';
import { Recorder, type Failure } from '../../scripts/chaos/http';
import { junitReport, failingOf } from '../../scripts/chaos/load';
import { acceptedFailure, documentedCodes, longestGap, unexpectedFailures } from '../../scripts/chaos/run';

/** The chaos run's judgement (scripts/chaos/run.ts): which failures a fault excuses, and how outages are measured. */
describe('chaos run: checks and figures', () => {
  const fault = { start: 10_000, end: 20_000, apiDown: false };
  const at = (ms: number, status: number, code: string): Failure => ({ at: ms, method: 'GET', route: '/api/search', status, code });

  it('excuses only a documented 503 within a fault window or its grace', () => {
    const failures = [
      at(12_000, 503, 'search-unavailable'), // excused
      at(34_000, 503, 'service-unavailable'), // in the 15 s grace: excused
      at(36_000, 503, 'service-unavailable'), // after the grace
      at(5_000, 503, 'service-unavailable'), // before any fault
      at(12_000, 500, 'internal-error'), // a 500 is never excused
      at(12_000, 503, 'some-undocumented-code'),
      at(12_000, 0, 'ECONNREFUSED'), // the API was up: a refused connection is not excused
    ];
    expect(unexpectedFailures(failures, [fault]).map((f) => `${f.at} ${f.status} ${f.code}`)).to.deep.equal([
      '36000 503 service-unavailable', '5000 503 service-unavailable', '12000 500 internal-error', '12000 503 some-undocumented-code', '12000 0 ECONNREFUSED',
    ]);
  });

  it('excuses a refused connection only while the API process itself was down', () => {
    expect(unexpectedFailures([at(12_000, 0, 'ECONNREFUSED')], [{ ...fault, apiDown: true }])).to.deep.equal([]);
  });

  it('every code it excuses is one docs/errors.md documents', () => {
    const documented = documentedCodes();
    for (const code of ['service-unavailable', 'read-model-lagging', 'search-unavailable', 'search-lagging', 'shutting-down', 'import-interrupted']) {
      expect(documented.has(code), code).to.equal(true);
    }
    expect(documented.has('some-undocumented-code')).to.equal(false);
  });

  it('a job may fail only with a documented code that is no internal error', () => {
    const documented = documentedCodes();
    expect(acceptedFailure('import-interrupted-too-long', documented)).to.equal(true);
    expect(acceptedFailure('import-internal-error', documented)).to.equal(false);
    expect(acceptedFailure('external-import-internal-error', documented)).to.equal(false);
    expect(acceptedFailure('no-such-code', documented)).to.equal(false);
  });

  it('measures the longest stretch a kind of request kept failing, and the longest with nothing served', () => {
    const recorder = new Recorder();
    const real = Date.now;
    const times = [1000, 2000, 3000, 7000, 8000];
    const outcomes: Array<[string, number]> = [['/a', 200], ['/a', 503], ['/b', 200], ['/b', 200], ['/a', 200]];
    try {
      outcomes.forEach(([route, status], i) => {
        Date.now = () => times[i];
        recorder.record('GET', route, status, status >= 500 ? 'service-unavailable' : '');
      });
    } finally {
      Date.now = real;
    }
    expect(recorder.longestOutage(0, 10_000)).to.deep.equal({ ms: 6000, route: 'GET /a' });
    expect(longestGap(recorder.served, 0, 10_000)).to.equal(4000);
    expect(longestGap(recorder.served, 3500, 6000)).to.equal(2500);
  });

  it('generates the JUnit report it uploads: every case once, every fifth failing', () => {
    const xml = junitReport('t', 1003);
    expect(xml.match(/<testcase /g)).to.have.length(1003);
    expect(new Set(xml.match(/name="case \d+"/g)).size).to.equal(1003);
    expect(xml.match(/<failure /g)).to.have.length(failingOf(1003));
  });
});
