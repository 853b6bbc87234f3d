import SwaggerParser from '@apidevtools/swagger-parser';
import { expect } from 'chai';
import { ENTITIES } from '../../../contracts/entities';
import { CATEGORIES, operationsOf } from '../../../services/api/openapi';
import { startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';

describe('OpenAPI descriptions (GET /api/docs)', function () {
  this.timeout(60_000);
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.stop());

  it('lists the categories of the interface spec, without authentication', async () => {
    const res = await new HttpClient(app.url).get('/api/docs');
    expect(res.status).to.equal(200);
    expect(res.body.categories.map((c: { name: string }) => c.name)).to.deep.equal(['custom', 'projects', 'testCases', 'testRuns', 'planning', 'users', 'integrations', 'other']);
    for (const c of res.body.categories) expect(c.url).to.equal(`/api/docs?category=${c.name}`);
  });

  for (const category of Object.keys(CATEGORIES)) {
    it(`${category}: a valid OpenAPI 3.0 document`, async () => {
      const res = await new HttpClient(app.url).get(`/api/docs?category=${category}`);
      expect(res.status).to.equal(200);
      expect(res.body.openapi).to.equal('3.0.3');
      // validate() resolves every $ref and checks the document against the OpenAPI 3.0 schema.
      await SwaggerParser.validate(structuredClone(res.body));
      const entities = Object.values(ENTITIES).filter((e) => e.category === category);
      for (const e of entities) {
        for (const op of ['findMany', 'findFirst', 'findUnique', 'findFirstOrThrow', 'findUniqueOrThrow', 'count', 'aggregate', 'groupBy'])
          expect(res.body.paths, `${e.name}/${op}`).to.have.property(`/api/model/${e.name}/${op}`);
        const documented = Object.keys(res.body.paths).filter((p) => p.startsWith(`/api/model/${e.name}/`)).map((p) => p.slice(`/api/model/${e.name}/`.length));
        expect(documented, e.name).to.have.members([...operationsOf(e)]);
      }
      if (category !== 'custom') expect(entities.length, 'a category with entities').to.be.greaterThan(0);
    });
  }

  it('describes each entity with the fields the API validates against', async () => {
    const doc = (await new HttpClient(app.url).get('/api/docs?category=testCases')).body;
    expect(Object.keys(doc.components.schemas.RepositoryCase.properties)).to.include.members(Object.keys(ENTITIES.repositoryCase.fields));
    expect(doc.components.schemas.RepositoryCaseCreateInput.required).to.deep.equal(['title', 'project']);
    expect(doc.paths).to.not.have.property('/api/model/step/create'); // owned: written through the case
    expect(doc.paths).to.not.have.property('/api/model/repositoryCaseVersion/update'); // projected
    expect(doc.paths['/api/auth/login']).to.equal(undefined);
    const custom = (await new HttpClient(app.url).get('/api/docs?category=custom')).body;
    expect(custom.paths).to.have.property('/api/auth/login');
    expect(custom.paths).to.have.property('/api/tokens');
    expect(custom.paths['/api/files/upload'].post.requestBody.content).to.have.property('multipart/form-data');
    expect(custom.paths['/api/files/{key}'].get.parameters[0].schema.pattern).to.equal('^[a-f0-9]{64}$');
  });

  it('refuses an unknown category with 400 and the error shape', async () => {
    const res = await new HttpClient(app.url).get('/api/docs?category=spaceships');
    expect(res.status).to.equal(400);
    expect(res.body).to.have.all.keys('error', 'code', 'details');
    expect(res.body.code).to.equal('unknown-category');
    expect(res.body.details.path).to.equal('category');
  });
});
