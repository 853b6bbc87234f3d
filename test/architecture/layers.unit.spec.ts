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
  {
    from: 'services/model/query.ts', to: 'infra/postgres/isoTimestamps.ts',
    why: 'the same: its rows go out as JSON, so it asks pg for timestamps as ISO text (pg\'s per-query type parsers) instead of Dates',
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

/**
 * The import cycles of the graph: its strongly connected components of more than one file (and a
 * file importing itself), each written as one path round it, from its first file in name order.
 * Iterative Tarjan, so a long chain of imports cannot overflow the stack.
 */
function cyclesOf(edges: ReadonlyArray<{ from: string; to: string }>): string[] {
  const next = new Map<string, string[]>();
  for (const { from, to } of edges) {
    if (!next.has(from)) next.set(from, []);
    if (!next.has(to)) next.set(to, []);
    next.get(from)!.push(to);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  for (const root of [...next.keys()].sort()) {
    if (index.has(root)) continue;
    const work: Array<{ node: string; i: number }> = [{ node: root, i: 0 }];
    index.set(root, index.size); low.set(root, index.get(root)!); stack.push(root); onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const targets = next.get(frame.node)!;
      if (frame.i < targets.length) {
        const to = targets[frame.i++];
        if (!index.has(to)) {
          index.set(to, index.size); low.set(to, index.get(to)!); stack.push(to); onStack.add(to);
          work.push({ node: to, i: 0 });
        } else if (onStack.has(to)) low.set(frame.node, Math.min(low.get(frame.node)!, index.get(to)!));
        continue;
      }
      work.pop();
      if (work.length > 0) low.set(work[work.length - 1].node, Math.min(low.get(work[work.length - 1].node)!, low.get(frame.node)!));
      if (low.get(frame.node) !== index.get(frame.node)) continue;
      const component: string[] = [];
      for (let member = stack.pop()!; ; member = stack.pop()!) {
        onStack.delete(member);
        component.push(member);
        if (member === frame.node) break;
      }
      if (component.length > 1 || next.get(frame.node)!.includes(frame.node)) components.push(component);
    }
  }
  // One path round each component: from its first file, always to the next file of the component not yet on the path (breadth-first back to the start).
  return components.map((component) => {
    const members = new Set(component);
    const start = [...component].sort()[0];
    const previous = new Map<string, string>();
    const queue = [start];
    let end: string | undefined;
    while (queue.length > 0 && end === undefined) {
      const node = queue.shift()!;
      for (const to of [...next.get(node)!].sort()) {
        if (!members.has(to)) continue;
        if (to === start) { end = node; break; }
        if (!previous.has(to)) { previous.set(to, node); queue.push(to); }
      }
    }
    const path = [start];
    for (let node = end!; node !== start; node = previous.get(node)!) path.splice(1, 0, node);
    return [...path, start].join(' → ');
  }).sort();
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

  it('no import cycle among our source files (each cycle listed, type-only imports included)', () => {
    expect(cyclesOf(all)).to.deep.equal([]);
  });

  it('the cycle check finds a cycle (the check works)', () => {
    const edges = [{ from: 'a.ts', to: 'b.ts' }, { from: 'b.ts', to: 'c.ts' }, { from: 'c.ts', to: 'a.ts' }, { from: 'c.ts', to: 'd.ts' }, { from: 'd.ts', to: 'd.ts' }];
    expect(cyclesOf(edges)).to.deep.equal(['a.ts → b.ts → c.ts → a.ts', 'd.ts → d.ts']);
  });

  it('every exception is still needed', () => {
    for (const e of EXCEPTIONS) expect(all, `${e.from} → ${e.to}: ${e.why}`).to.deep.include({ from: e.from, to: e.to });
  });
});
