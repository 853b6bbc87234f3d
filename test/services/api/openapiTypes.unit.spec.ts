import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';
import ts from 'typescript';
import { CATEGORIES, type Category, openApiFor } from '../../../services/api/openapi';

/**
 * What a client written against the generated types may and may not write: null where the API
 * takes null, and not where it does not. Each `@ts-expect-error` fails the compilation when the
 * line below it compiles.
 */
const USES = `
import type { components as Users } from './users';
import type { components as TestCases, paths as TestCasePaths } from './testCases';
import type { components as Integrations } from './integrations';

type UserWhere = Users['schemas']['UserWhereInput'];
export const optionalRelation: UserWhere[] = [{ role: null }, { role: { is: null } }, { role: { isNot: null } }, { role: { isNot: { name: 'r' } } }, { role: { name: 'r' } }];
export const includedRole: Users['schemas']['User']['role'] = null;

type CaseWhere = TestCases['schemas']['RepositoryCaseWhereInput'];
export const optionalFolder: CaseWhere = { folder: null, project: { name: 'p' } };
// @ts-expect-error a case always has a project
export const requiredProject: CaseWhere = { project: null };
// @ts-expect-error a case always has a project
export const requiredProjectIs: CaseWhere = { project: { is: null } };

type FindFirst = TestCasePaths['/api/model/repositoryCase/findFirst']['post']['responses'][200]['content']['application/json'];
export const nothingFound: FindFirst = { data: null };
type FindMany = TestCasePaths['/api/model/repositoryCase/findMany']['post']['responses'][200]['content']['application/json'];
// @ts-expect-error findMany answers a list, never null
export const noList: FindMany = { data: null };

export const noSettings: Integrations['schemas']['IntegrationWhereInput'] = { settings: null };
export const anySettings: Integrations['schemas']['Integration']['settings'] = { any: ['json'] };
`;

describe('OpenAPI documents through openapi-typescript', function () {
  this.timeout(300_000);
  let dir: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-types-'));
  });
  after(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('generates types for every category that compile under strict TypeScript, null where the API takes null', async () => {
    const files: string[] = [];
    for (const category of Object.keys(CATEGORIES) as Category[]) {
      const file = path.join(dir, `${category}.ts`);
      fs.writeFileSync(file, astToString(await openapiTS(openApiFor(category, '0.0.0') as OpenAPI3, { silent: true })));
      files.push(file);
    }
    files.push(path.join(dir, 'uses.ts'));
    fs.writeFileSync(files.at(-1)!, USES);
    const program = ts.createProgram(files, {
      strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler,
      lib: ['lib.es2022.d.ts'], types: [], skipLibCheck: false, noUnusedLocals: true,
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => {
      const where = d.file ? `${path.basename(d.file.fileName)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1} ` : '';
      return `${where}${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
    expect(diagnostics).to.deep.equal([]);
  });
});
