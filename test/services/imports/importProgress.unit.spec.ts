import { expect } from 'chai';
import { progressOf } from '../../../services/imports/imports.routes';

/** A job as the `imports` read model shows it (jobAnswer's view), with what a test changes. */
const view = (changes: Partial<Parameters<typeof progressOf>[0]>) => ({
  state: 'queued', finalizing: false, format: 'junit', totalCases: null, processedCases: 0, warningCount: 0, ...changes,
});

describe('the progress an import stream shows, from the job in the read model', () => {
  it('a queued job no worker holds says nothing at first, then that it waits for a worker', () => {
    expect(progressOf(view({}), 7, false, 500)).to.equal(null);
    const waiting = progressOf(view({}), 7, false, 3000)!;
    expect(waiting.progress).to.equal(5);
    expect(waiting.status).to.match(/^Import job 7 is waiting for a worker/);
  });

  it('a queued job a worker holds is being parsed', () => {
    expect(progressOf(view({}), 7, true, 0)).to.deep.equal({ progress: 10, status: 'Parsing JUNIT results...' });
  });

  it('a running job shows its chunks between 25 and 95, then finalizing once every case is in', () => {
    expect(progressOf(view({ state: 'running', totalCases: 200, processedCases: 0 }), 7, true, 0)).to.equal(null);
    expect(progressOf(view({ state: 'running', totalCases: 200, processedCases: 100 }), 7, true, 0)).to.deep.equal({ progress: 60, status: 'Imported 100 of 200 test cases...' });
    expect(progressOf(view({ state: 'running', totalCases: 200, processedCases: 200 }), 7, true, 0)).to.deep.equal({ progress: 95, status: 'Finalizing import...' });
    // Finished, but not every read model has it yet.
    expect(progressOf(view({ state: 'running', finalizing: true, totalCases: 200, processedCases: 200 }), 7, false, 0)!.progress).to.equal(95);
  });

  it('a completed job is at 100; a failed one shows no progress (its error ends the stream)', () => {
    expect(progressOf(view({ state: 'completed', totalCases: 3, processedCases: 3 }), 7, false, 0)).to.deep.equal({ progress: 100, status: 'Import completed successfully' });
    expect(progressOf(view({ state: 'failed' }), 7, false, 10_000)).to.equal(null);
  });
});
