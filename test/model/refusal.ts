import { expect } from 'chai';
import { HttpError } from '../../services/shared/errors';

/** The 400 `invalid-argument` that `parse` throws (fails the test when it throws none, or another). */
export function refusal(parse: () => unknown): HttpError {
  try {
    parse();
  } catch (err) {
    expect(err).to.be.instanceOf(HttpError);
    const error = err as HttpError;
    expect(error.status).to.equal(400);
    expect(error.code).to.equal('invalid-argument');
    return error;
  }
  throw new Error('expected the arguments to be refused');
}

/** Where the refusal points: its `details.path`. */
export const refusedAt = (parse: () => unknown): string => refusal(parse).details.path as string;
