import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import ts from 'typescript';
import { statusOfDomainCode } from '../../services/shared/http';
import { BEGIN, END, ERRORS_DOC, entityCodes, withCurrentEntityCodes } from '../../scripts/errors-doc';

/**
 * docs/errors.md and the source name the same error codes. The source is parsed with the
 * TypeScript compiler (not searched line by line), so multi-line calls, comments and strings
 * cannot hide or fake a code.
 */

const ROOT = path.join(__dirname, '..', '..');
const SOURCE_DIRS = ['services', 'infra', 'projections', 'contracts'];

/** Where a code comes from: its status is a number, follows from the code (DomainError), or is unknown here. */
type Status = number | 'domain' | null;
interface Site { code: string; status: Status; where: string }

/**
 * Functions that make an error from a code argument. HttpError and DomainError to start with;
 * every function that passes one of its own parameters on as the code (badRequest, unauthorized,
 * any new helper) is found and added. `status` is a number, 'domain', or the index of the argument that holds it.
 */
interface Maker { codeArg: number; status: number | 'domain' | { arg: number } }
const MAKERS = new Map<string, Maker>([
  ['HttpError', { codeArg: 1, status: { arg: 0 } }],
  ['DomainError', { codeArg: 0, status: 'domain' }],
  ['ResultFileError', { codeArg: 0, status: 'domain' }],
  // An external export refused (services/migration/exportReader.ts): the job fails with its code.
  ['ExportFileError', { codeArg: 0, status: 400 }],
  // The read models' wait (projections/runtime/checkpointWatcher.ts): the error handler answers it with 503.
  ['ReadModelWaitFailed', { codeArg: 0, status: 503 }],
]);
/** The error handler's local `body(status, code, error, details)` writes the answer itself. */
const ERROR_HANDLER = { file: path.join('services', 'shared', 'http.ts'), name: 'body', maker: { codeArg: 1, status: { arg: 0 } } as Maker };

const KEBAB = /^[a-z0-9]+(-[a-z0-9]+)*$/;
/** A pattern's shape: `<entity>-<field>-taken` and `${a}-${b}-taken` are both `<>-<>-taken`. */
const shapeOfDoc = (pattern: string) => pattern.replace(/<[^>]*>/g, '<>');
const regexOfShape = (shape: string) => new RegExp(`^${shape.split('<>').map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[a-z0-9]+(?:-[a-z0-9]+)*')}$`);
const statusOf = (status: Status, code: string): number | null =>
  status === 'domain' ? statusOfDomainCode(code.replace(/<>/g, 'x')) : status;

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const full = path.join(dir, d.name);
    if (d.isDirectory()) return d.name === 'node_modules' ? [] : sourceFiles(full);
    return d.name.endsWith('.ts') && !d.name.endsWith('.d.ts') ? [full] : [];
  });
}

const calleeName = (node: ts.CallExpression | ts.NewExpression): string | undefined => {
  const e = node.expression;
  if (ts.isIdentifier(e)) return e.text;
  if (ts.isPropertyAccessExpression(e)) return e.name.text; // errors.badRequest(...)
  return undefined;
};

/** Parameter names of the nearest enclosing function, with their index. */
function enclosingParameters(node: ts.Node): Map<string, ts.ParameterDeclaration & { index: number }> {
  for (let n: ts.Node | undefined = node.parent; n; n = n.parent) {
    if (ts.isFunctionLike(n)) {
      return new Map(n.parameters.flatMap((p, index) => (ts.isIdentifier(p.name) ? [[p.name.text, Object.assign(p, { index })] as const] : [])));
    }
  }
  return new Map();
}

/** The name a function is known by: `function f`, `const f = () =>`, `f: () =>`. */
function functionName(node: ts.Node): string | undefined {
  for (let n: ts.Node | undefined = node.parent; n; n = n.parent) {
    if (!ts.isFunctionLike(n)) continue;
    if ((ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n)) && n.name && ts.isIdentifier(n.name)) return n.name.text;
    const holder = n.parent;
    if (holder && (ts.isVariableDeclaration(holder) || ts.isPropertyAssignment(holder)) && ts.isIdentifier(holder.name)) return holder.name.text;
    return undefined;
  }
  return undefined;
}

function scanSource(): { literals: Site[]; patterns: Site[]; unresolved: string[] } {
  const files = SOURCE_DIRS.flatMap((d) => sourceFiles(path.join(ROOT, d)));
  const parsed = files.map((file) => ({
    rel: path.relative(ROOT, file),
    source: ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true),
  }));
  const calls: { rel: string; node: ts.CallExpression | ts.NewExpression; sf: ts.SourceFile }[] = [];
  const classCodes: Site[] = [];
  for (const { rel, source } of parsed) {
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node) || ts.isNewExpression(node)) calls.push({ rel, node, sf: source });
      // `readonly code = 'concurrency-conflict'` of an error class the handler answers by its code.
      if (ts.isPropertyDeclaration(node) && ts.isIdentifier(node.name) && node.name.text === 'code' && node.initializer && ts.isStringLiteralLike(node.initializer)) {
        classCodes.push({ code: node.initializer.text, status: null, where: `${rel}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}` });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }

  const makerOf = (rel: string, node: ts.CallExpression | ts.NewExpression): Maker | undefined => {
    const name = calleeName(node);
    if (name === undefined) return undefined;
    if (rel === ERROR_HANDLER.file && name === ERROR_HANDLER.name && ts.isCallExpression(node)) return ERROR_HANDLER.maker;
    return MAKERS.get(name);
  };

  // Helpers: functions that pass a parameter of their own on as the code, until no new one turns up.
  for (let found = true; found;) {
    found = false;
    for (const { rel, node } of calls) {
      const maker = makerOf(rel, node);
      const arg = maker && node.arguments?.[maker.codeArg];
      if (!maker || !arg || !ts.isIdentifier(arg)) continue;
      const param = enclosingParameters(node).get(arg.text);
      const name = functionName(node);
      if (!param || !name || MAKERS.has(name)) continue;
      let status: Maker['status'] = maker.status;
      if (typeof status === 'object') {
        const statusArg = node.arguments![status.arg];
        const statusParam = statusArg && ts.isIdentifier(statusArg) ? enclosingParameters(node).get(statusArg.text) : undefined;
        status = statusArg && ts.isNumericLiteral(statusArg) ? Number(statusArg.text) : statusParam ? { arg: statusParam.index } : { arg: -1 };
      }
      MAKERS.set(name, { codeArg: param.index, status });
      found = true;
    }
  }

  const literals: Site[] = [...classCodes];
  const patterns: Site[] = [];
  const unresolved: string[] = [];
  for (const { rel, node, sf } of calls) {
    const maker = makerOf(rel, node);
    if (!maker) continue;
    const where = `${rel}:${sf.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
    const args = node.arguments ?? ts.factory.createNodeArray();
    let status: Status;
    if (typeof maker.status !== 'object') status = maker.status;
    else {
      const s = args[maker.status.arg];
      status = s && ts.isNumericLiteral(s) ? Number(s.text) : null;
    }
    const params = enclosingParameters(node);
    const collect = (arg: ts.Expression | undefined): void => {
      if (arg === undefined) return; // the helper's default, collected below
      if (ts.isParenthesizedExpression(arg) || ts.isAsExpression(arg)) return collect(arg.expression);
      if (ts.isStringLiteralLike(arg)) literals.push({ code: arg.text, status, where });
      else if (ts.isTemplateExpression(arg)) patterns.push({ code: arg.head.text + arg.templateSpans.map((s) => `<>${s.literal.text}`).join(''), status, where });
      else if (ts.isConditionalExpression(arg)) { collect(arg.whenTrue); collect(arg.whenFalse); }
      else if (ts.isIdentifier(arg) && params.has(arg.text)) {
        // A helper passing its parameter on; its callers are scanned. A default value is a code of its own.
        const initializer = params.get(arg.text)!.initializer;
        if (initializer) collect(initializer);
      } else if (ts.isPropertyAccessExpression(arg) && arg.name.text === 'code') {
        // An error answered or re-thrown with the code it already has (err.code, error.code).
      } else unresolved.push(`${where}: ${arg.getText(sf)}`);
    };
    collect(args[maker.codeArg]);
  }
  return { literals, patterns, unresolved };
}

interface DocRow { code: string; statuses: number[]; line: number }

/** Every table row whose first cell is one `code` is a code (or, with `<…>`, a pattern); the generated block is checked on its own. */
function documentedRows(doc: string): DocRow[] {
  const rows: DocRow[] = [];
  let generated = false;
  doc.split('\n').forEach((line, i) => {
    if (line.startsWith(BEGIN)) generated = true;
    if (line.startsWith(END)) generated = false;
    const m = /^\|\s*`([^`]+)`\s*\|([^|]*)\|/.exec(line);
    if (m && !generated) rows.push({ code: m[1], statuses: (m[2].match(/\b[1-5]\d\d\b/g) ?? []).map(Number), line: i + 1 });
  });
  return rows;
}

describe('docs/errors.md', () => {
  const doc = fs.readFileSync(ERRORS_DOC, 'utf8');
  const { literals, patterns, unresolved } = scanSource();
  const rows = documentedRows(doc);
  const documentedCodes = rows.filter((r) => !r.code.includes('<'));
  const documentedPatterns = rows.filter((r) => r.code.includes('<'));

  it('finds the codes in the source at all', () => {
    expect(literals.map((s) => s.code)).to.include.members(['invalid-argument', 'not-found', 'unauthenticated', 'internal-error', 'concurrency-conflict']);
    expect(patterns.map((s) => s.code)).to.include.members(['<>-not-found', '<>-<>-taken']);
  });

  it('every code argument in the source is a literal, a pattern, or an error passed on', () => {
    expect(unresolved, `make these codes literals (or teach this test the new form):\n${unresolved.join('\n')}`).to.deep.equal([]);
  });

  it('every code and pattern in the source is kebab-case', () => {
    const bad = [...literals.filter((s) => !KEBAB.test(s.code)), ...patterns.filter((s) => !KEBAB.test(s.code.replace(/<>/g, 'x')))];
    expect(bad.map((s) => `${s.code} (${s.where})`)).to.deep.equal([]);
  });

  it('lists every literal code of the source', () => {
    const listed = new Set(documentedCodes.map((r) => r.code));
    const missing = literals.filter((s) => !listed.has(s.code));
    expect([...new Set(missing.map((s) => `${s.code} (${s.where})`))], 'codes missing from docs/errors.md').to.deep.equal([]);
  });

  it('lists every code pattern of the source (template literals)', () => {
    const listed = new Set(documentedPatterns.map((r) => shapeOfDoc(r.code)));
    const missing = patterns.filter((s) => !listed.has(s.code));
    expect([...new Set(missing.map((s) => `${s.code} (${s.where})`))], 'patterns missing from docs/errors.md').to.deep.equal([]);
  });

  it('lists no code the source no longer has', () => {
    const inSource = new Set(literals.map((s) => s.code));
    const stale = documentedCodes.filter((r) => !inSource.has(r.code));
    expect(stale.map((r) => `${r.code} (docs/errors.md:${r.line})`), 'documented codes the source does not have').to.deep.equal([]);
    const malformed = documentedCodes.filter((r) => !KEBAB.test(r.code));
    expect(malformed.map((r) => `${r.code} (docs/errors.md:${r.line})`), 'documented codes that are not kebab-case').to.deep.equal([]);
  });

  it('lists no pattern the source no longer has', () => {
    const inSource = new Set(patterns.map((s) => s.code));
    const stale = documentedPatterns.filter((r) => !inSource.has(shapeOfDoc(r.code)));
    expect(stale.map((r) => `${r.code} (docs/errors.md:${r.line})`)).to.deep.equal([]);
  });

  it('gives each code the status the source answers it with', () => {
    const wrong: string[] = [];
    for (const row of rows) {
      const sites = row.code.includes('<') ? patterns.filter((s) => s.code === shapeOfDoc(row.code)) : literals.filter((s) => s.code === row.code);
      const known = [...new Set(sites.map((s) => statusOf(s.status, s.code)).filter((s): s is number => s !== null))].sort();
      if (known.length === 0) continue; // answered through a class's code (concurrency-conflict): no status at the site
      const complete = sites.every((s) => statusOf(s.status, s.code) !== null);
      const documented = [...new Set(row.statuses)].sort();
      const ok = complete ? JSON.stringify(documented) === JSON.stringify(known) : known.every((s) => documented.includes(s));
      if (!ok) wrong.push(`${row.code} (docs/errors.md:${row.line}): documented ${documented.join(', ') || 'none'}, source ${known.join(', ')}`);
    }
    expect(wrong).to.deep.equal([]);
  });

  it('has the current entity codes (regenerate: npx tsx scripts/errors-doc.ts)', () => {
    expect(doc).to.equal(withCurrentEntityCodes(doc));
  });

  it('each generated entity code fits a documented pattern', () => {
    const shapes = documentedPatterns.map((r) => regexOfShape(shapeOfDoc(r.code)));
    const unfit = [...entityCodes().values()].flat().filter((code) => !shapes.some((re) => re.test(code)));
    expect(unfit).to.deep.equal([]);
  });
});
