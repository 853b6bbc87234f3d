import { expect } from 'chai';
import { openApiFor } from '../../../services/api/openapi';

describe('OpenAPI: administration and sessions in the custom category', () => {
  const doc = openApiFor('custom', '0.0.0') as any;

  it('describes the admin token list and revocation, with their refusals', () => {
    const list = doc.paths['/api/admin/tokens'].get;
    expect(list.parameters.map((p: { name: string }) => p.name)).to.have.members(['take', 'cursor', 'skip', 'userId', 'active']);
    expect(list.parameters.find((p: { name: string }) => p.name === 'take').schema).to.include({ default: 50, maximum: 500 });
    expect(Object.keys(list.responses)).to.have.members(['200', '400', '401', '403']);
    const token = list.responses[200].content['application/json'].schema.properties.data.items;
    expect(Object.keys(token.properties)).to.have.members(['id', 'owner', 'name', 'prefix', 'createdAt', 'expiresAt', 'lastUsedAt', 'revokedAt']);
    const revoke = doc.paths['/api/admin/tokens/{id}'].delete;
    expect(Object.keys(revoke.responses)).to.include.members(['204', '400', '401', '403', '404']);
    expect(revoke.responses[404].description).to.include('api-token-not-found');
  });

  it('says when a session ends (401 session-expired) and when a cookie request is refused (403 csrf-rejected)', () => {
    const session = doc.components.securitySchemes.session.description;
    for (const words of ['session-expired', 'SESSION_IDLE_TIMEOUT_MS', 'SESSION_ABSOLUTE_TIMEOUT_MS', 'csrf-rejected', 'ALLOWED_ORIGINS'])
      expect(session).to.include(words);
    for (const [path, method] of [['/api/auth/login', 'post'], ['/api/auth/logout', 'post'], ['/api/tokens', 'post'], ['/api/tokens/{id}', 'delete']])
      expect(doc.paths[path][method].responses[403].description, `${method} ${path}`).to.include('csrf-rejected');
    expect(doc.paths['/api/auth/me'].get.responses[401].description).to.include('session-expired');
  });
});
