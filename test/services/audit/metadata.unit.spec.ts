import { createHash, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { loadContracts } from '../../../contracts/validator';
import { metadataFor, type RequestAuth } from '../../../services/shared/context';

const user = { id: 7, email: 'ann@example.com', name: 'Ann', access: 'USER' as const };
const bearer: RequestAuth = { user, tokenId: 3, via: 'api' };
const session: RequestAuth = { user, via: 'session' };

/** The metadata every command of a request carries: the audit trail's source. */
describe('metadataFor: who, how, from where', () => {
  it('a bearer token is via api, or via cli when the User-Agent is the CLI', () => {
    expect(metadataFor(bearer, { correlationId: 'c1', ip: '10.0.0.1', headers: { 'user-agent': 'curl/8.5.0' } }))
      .to.deep.equal({ actor: { userId: 7, tokenId: 3, via: 'api' }, ip: '10.0.0.1', correlationId: 'c1', causationId: null });
    expect(metadataFor(bearer, { correlationId: 'c2', headers: { 'user-agent': 'testament-cli/1.0' } }).actor)
      .to.deep.equal({ userId: 7, tokenId: 3, via: 'cli' });
    expect(metadataFor(bearer, { correlationId: 'c3', headers: { 'user-agent': 'my-testament-cli/1.0' } }).actor.via).to.equal('api');
    expect(metadataFor(bearer, { correlationId: 'c4', headers: {} }).actor.via).to.equal('api');
  });

  it('a session is named by the first 16 hex digits of SHA-256 of its id, and stays a session whatever the User-Agent', () => {
    const meta = metadataFor(session, { correlationId: 'c5', ip: '::1', sessionID: 'the-session-id', headers: { 'user-agent': 'testament-cli/1.0' } });
    expect(meta.actor).to.deep.equal({ userId: 7, sessionRef: createHash('sha256').update('the-session-id').digest('hex').slice(0, 16), via: 'session' });
    expect(JSON.stringify(meta)).to.not.include('the-session-id');
    // A bearer request that also carries a session cookie is the token's, not the session's.
    expect(metadataFor(bearer, { correlationId: 'c6', sessionID: 'the-session-id' }).actor).to.not.have.property('sessionRef');
  });

  it('the envelope contract takes events with a session reference and still every event without one', () => {
    const contracts = loadContracts();
    const envelope = (actor: Record<string, unknown>) => ({
      id: randomUUID(), type: 'TagDeleted', schemaVersion: 1, streamId: 'tag-1', revision: '1', position: '12', recordedAt: '2026-06-01T12:00:00.000Z',
      data: { tagId: 1, deletedAt: '2026-06-01T12:00:00.000Z' }, metadata: { actor, correlationId: 'c', causationId: null },
    });
    expect(() => contracts.checkEnvelope(envelope({ userId: 7, via: 'session' }))).to.not.throw();
    expect(() => contracts.checkEnvelope(envelope({ userId: 7, tokenId: 3, via: 'cli' }))).to.not.throw();
    expect(() => contracts.checkEnvelope(envelope({ userId: 7, sessionRef: '0123456789abcdef', via: 'session' }))).to.not.throw();
    expect(() => contracts.checkEnvelope(envelope({ userId: 7, sessionRef: 'the-session-id', via: 'session' }))).to.throw(/EventEnvelope/);
  });
});
