import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import ts from 'typescript';

const ROOT = path.join(__dirname, '..', '..');

/**
 * The layers, and what each may import of ours (docs/architecture.md, "Layers"). A folder's imports
 * say what it may touch: the contracts depend on nothing of ours; the kernel (services/shared:
 * ports, errors, faults, HTTP helpers) on the contracts; projections know no bounded context and
 * no HTTP; a bounded context knows no process wiring; adapters (infra/) implement ports declared
 * beside the domain; the process wiring (services/process) and the HTTP composition
 * (services/api) put it all together. The first layer whose folder holds a file is its layer.
 */
const LAYERS: ReadonlyArray<{ layer: string; under: string; may: readonly string[] }> = [
  { layer: 'contracts', under: 'contracts/', may: [] },
  { layer: 'kernel', under: 'services/shared/', may: ['contracts'] },
  { layer: 'wiring', under: 'services/process/', may: ['contracts', 'kernel', 'contexts', 'api', 'projections', 'adapters'] },
  { layer: 'api', under: 'services/api/', may: ['contracts', 'kernel', 'contexts'] },
  { layer: 'cli', under: 'services/cli/', may: ['contracts', 'kernel'] },
  // The pages' browser code talks to the server through the public API only.
  { layer: 'browser', under: 'services/web/client/', may: ['browser'] },
  { layer: 'contexts', under: 'services/', may: ['contracts', 'kernel', 'contexts'] },
  { layer: 'projections', under: 'projections/', may: ['contracts', 'kernel', 'projections', 'adapters'] },
  { layer: 'adapters', under: 'infra/', may: ['contracts', 'kernel', 'contexts', 'adapters'] },
  { layer: 'scripts', under: 'scripts/', may: ['contracts', 'kernel', 'contexts', 'api', 'projections', 'adapters', 'wiring'] },
];

/**
 * Imports the rules do not allow, each with its reason. Keep this list short: an entry is a
 * decision, not a way around the rule.
 */
const EXCEPTIONS: ReadonlyArray<{ from: string; to: string; why: string }> = [
  {
    from: 'services/model/query.ts', to: 'infra/postgres/preparedStatements.ts',
    why: 'the model API compiles to PostgreSQL SQL (DESIGN: model API → SQL on the read model); it names its statements for pg',
  },
];

const SOURCE_DIRS = ['contracts', 'services', 'projections', 'infra', 'scripts'];

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const full = path.join(dir, d.name);
    if (d.isDirectory()) return sourceFiles(full);
    return d.name.endsWith('.ts') && !d.name.endsWith('.d.ts') ? [full] : [];
  });
}

const layerOf = (file: string) => LAYERS.find((l) => file.startsWith(l.under))?.layer;

/** Every relative import (static, dynamic, type-only and re-exports alike) of our source files, resolved to a file. */
function imports(): Array<{ from: string; to: string }> {
  const found: Array<{ from: string; to: string }> = [];
  for (const file of SOURCE_DIRS.flatMap((d) => sourceFiles(path.join(ROOT, d)))) {
    const from = path.relative(ROOT, file).split(path.sep).join('/');
    const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      let spec: ts.Expression | undefined;
      if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) spec = node.moduleSpecifier;
      else if (ts.isCallExpression(node) && (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))) spec = node.arguments[0];
      if (spec && ts.isStringLiteralLike(spec) && spec.text.startsWith('.')) {
        const target = path.relative(ROOT, path.resolve(path.dirname(file), spec.text)).split(path.sep).join('/');
        const to = [`${target}.ts`, `${target}/index.ts`, target].find((candidate) => fs.existsSync(path.join(ROOT, candidate))) ?? target;
        found.push({ from, to });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

describe('layers: what each folder may import', () => {
  const all = imports();

  it('finds the imports it checks (the scan works)', () => {
    expect(all.length).to.be.greaterThan(500);
    expect(all).to.deep.include({ from: 'contracts/validator.ts', to: 'contracts/contractViolation.ts' });
  });

  it('no import runs against the layers (each one listed with the rule it breaks)', () => {
    const broken = all.flatMap(({ from, to }) => {
      const a = layerOf(from);
      const b = layerOf(to);
      if (a === undefined || b === undefined || a === b) return [];
      if (LAYERS.find((l) => l.layer === a)!.may.includes(b)) return [];
      if (EXCEPTIONS.some((e) => e.from === from && e.to === to)) return [];
      return [`${from} (${a}) imports ${to} (${b})`];
    });
    expect(broken).to.deep.equal([]);
  });

  it('every exception is still needed', () => {
    for (const e of EXCEPTIONS) expect(all, `${e.from} → ${e.to}: ${e.why}`).to.deep.include({ from: e.from, to: e.to });
  });
});
