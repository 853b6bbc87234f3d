import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { OUTCOME_TABLES } from '../../services/imports/formats/outcomes';

/**
 * docs/imports.md shows each format's outcome mapping; the parsers take theirs from
 * services/imports/formats/outcomes.ts. The page's tables and the module's are compared whole,
 * row for row and in order, so neither can change without the other.
 */

const DOC = path.join(__dirname, '..', '..', 'docs', 'imports.md');
const HEADING = /^### Outcomes: (.+)$/;

/** Each `### Outcomes: <format>` heading with the rows of the table that follows it. */
function outcomeTablesOf(markdown: string): Array<{ format: string; rows: Array<[string, string]> }> {
  const lines = markdown.split('\n');
  const tables: Array<{ format: string; rows: Array<[string, string]> }> = [];
  for (let i = 0; i < lines.length; i++) {
    const heading = HEADING.exec(lines[i].trim());
    if (!heading) continue;
    let at = i + 1;
    while (at < lines.length && lines[at].trim() === '') at++;
    const table: string[] = [];
    while (at < lines.length && lines[at].trim().startsWith('|')) table.push(lines[at++].trim());
    if (table.length < 2) throw new Error(`docs/imports.md: no table after "### Outcomes: ${heading[1]}"`);
    const [header, separator, ...body] = table.map(cellsOf);
    expect(header, `header of ${heading[1]}`).to.deep.equal(['Value in the file', 'Outcome']);
    expect(separator.every((cell) => /^:?-+:?$/.test(cell)), `separator of ${heading[1]}`).to.equal(true);
    tables.push({
      format: heading[1],
      rows: body.map((cells) => {
        expect(cells, `a row of ${heading[1]}`).to.have.length(2);
        return [unquoted(cells[0]), unquoted(cells[1])];
      }),
    });
  }
  return tables;
}

function cellsOf(row: string): string[] {
  return row.replace(/^\|/, '').replace(/\|$/, '').split('|').map((cell) => cell.trim());
}

function unquoted(cell: string): string {
  return /^`[^`]*`$/.test(cell) ? cell.slice(1, -1) : cell;
}

describe('docs/imports.md', () => {
  it('shows exactly the outcome tables the parsers use, format by format, row by row', () => {
    const documented = outcomeTablesOf(fs.readFileSync(DOC, 'utf8'));
    const inCode = Object.entries(OUTCOME_TABLES).map(([format, table]) => ({ format, rows: Object.entries(table) }));
    expect(documented.map((t) => t.format)).to.deep.equal(inCode.map((t) => t.format));
    for (const table of inCode) expect(documented.find((t) => t.format === table.format)?.rows, table.format).to.deep.equal(table.rows);
  });

  it('the comparison notices a row changed, added or left out on either side', () => {
    const doc = fs.readFileSync(DOC, 'utf8');
    const junit = (markdown: string) => outcomeTablesOf(markdown).find((t) => t.format === 'JUnit')?.rows;
    const code = Object.entries(OUTCOME_TABLES.JUnit);
    expect(junit(doc)).to.deep.equal(code);
    expect(junit(doc.replace('| `<error>` | error |', '| `<error>` | failed |'))).not.to.deep.equal(code);
    expect(junit(doc.replace('| `<skipped>` | skipped |\n', ''))).not.to.deep.equal(code);
    expect(junit(doc.replace('| `<skipped>` | skipped |\n', '| `<skipped>` | skipped |\n| `<ignored>` | skipped |\n'))).not.to.deep.equal(code);
  });
});
