import net from 'node:net';
import { expect } from 'chai';
import { errorFields } from '../../infra/logger';

describe('errorFields: what a fatal line says about its cause', () => {
  it('a system error: message, code, syscall, address, port and stack', async () => {
    // A port just closed: connecting to it is refused.
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const { port: p } = s.address() as net.AddressInfo;
        s.close(() => resolve(p));
      });
    });
    const error = await new Promise<unknown>((resolve) => net.connect(port, '127.0.0.1').on('error', resolve));
    const fields = errorFields(error);
    expect(fields).to.include({ type: 'Error', code: 'ECONNREFUSED', syscall: 'connect', address: '127.0.0.1', port });
    expect(fields.message).to.include('ECONNREFUSED');
    expect(fields.stack).to.be.a('string');
  });

  it('an aggregate error with an empty message lists its errors; a cause is followed', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' });
    const fields = errorFields(new Error('cannot open the database', { cause: new AggregateError([refused], '') }));
    expect(fields.message).to.equal('cannot open the database');
    const cause = fields.cause as Record<string, unknown>;
    expect(cause).to.include({ type: 'AggregateError', message: '' });
    expect(cause.errors).to.have.length(1);
    expect((cause.errors as Record<string, unknown>[])[0]).to.include({ message: 'connect ECONNREFUSED ::1:5432', code: 'ECONNREFUSED' });
  });

  it('a rejection without an error, or with something else, still says something', () => {
    expect(errorFields(undefined)).to.deep.equal({ type: 'undefined', message: 'undefined (failed without saying why)' });
    expect(errorFields({ status: 3 })).to.deep.equal({ type: 'object', message: '{ status: 3 }' });
    expect(errorFields('boom')).to.deep.equal({ type: 'string', message: "'boom'" });
    expect(errorFields(null)).to.deep.equal({ type: 'null', message: 'null' });
  });
});
