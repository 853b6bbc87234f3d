import { assertNever } from '../../shared/errors';
import { parseCucumber } from './cucumber';
import { detectFormat, isBlankHead, readHead } from './detect';
import { parseJunit } from './junit';
import { parseMocha } from './mocha';
import { parseMstest } from './mstest';
import { parseNunit } from './nunit';
import { IMPORT_FORMATS, type ImportFormat, ResultFileError, type ResultParser } from './parsedResult';
import { parseTestng } from './testng';
import { parseXunit } from './xunit';

export function parserFor(format: ImportFormat): ResultParser {
  switch (format) {
    case 'junit':
      return parseJunit;
    case 'testng':
      return parseTestng;
    case 'nunit':
      return parseNunit;
    case 'xunit':
      return parseXunit;
    case 'mstest':
      return parseMstest;
    case 'mocha':
      return parseMocha;
    case 'cucumber':
      return parseCucumber;
    default:
      return assertNever(format);
  }
}

/**
 * The one format of an upload's files. With 'auto' each file is detected from its head: a file
 * matching no format, an empty file, or files of different formats are refused. A requested
 * format is taken as given; its parser refuses content in another format.
 */
export async function detectFormats(
  files: Array<{ path: string; originalName: string }>,
  requested: ImportFormat | 'auto',
): Promise<ImportFormat> {
  if (requested !== 'auto') return requested;
  const formats: Record<string, ImportFormat> = {};
  for (const { path, originalName } of files) {
    const head = await readHead(path);
    if (isBlankHead(head)) throw new ResultFileError('empty-file', `${originalName} is empty`, { file: originalName });
    const format = detectFormat(head, originalName);
    if (!format) {
      throw new ResultFileError(
        'unknown-format',
        `${originalName} is in none of the formats Testament imports (${IMPORT_FORMATS.join(', ')})`,
        { file: originalName, supported: [...IMPORT_FORMATS] },
      );
    }
    formats[originalName] = format;
  }
  const distinct = [...new Set(Object.values(formats))];
  if (distinct.length > 1) {
    const message = `The files are in different formats (${distinct.join(', ')}); import them separately`;
    throw new ResultFileError('mixed-formats', message, { formats });
  }
  if (distinct.length === 0) throw new ResultFileError('unknown-format', 'No result file to detect a format from', {});
  return distinct[0];
}
