import { compile } from 'html-to-text';

/**
 * The export's rich text (notes, docs, missions, step texts, custom text fields) is HTML. This
 * domain keeps text as plain text everywhere (the model API, search, the CLI and the pages show it
 * as text), so imported HTML becomes plain text: paragraphs and line breaks kept, lists as "* "
 * items, links as "text [url]", tables as aligned text, images by their alt text; every tag,
 * script, style and attribute dropped, entities decoded. Nothing of the markup survives to be
 * rendered by anyone, so nothing needs escaping later. Text without markup passes as it is.
 */

const OPTIONS = {
  wordwrap: false as const,
  // The formatter walks the document recursively: markup nested deeper than a row may be (64
  // levels, EXPORT_SHAPE_LIMITS) is cut to "...", never followed down to a stack overflow.
  limits: { maxDepth: 64 },
  selectors: [
    { selector: 'a', options: { hideLinkHrefIfSameAsText: true, ignoreHref: false } },
    { selector: 'img', format: 'skip' },
    { selector: 'ul', options: { itemPrefix: '* ' } },
    { selector: 'h1', options: { uppercase: false } },
    { selector: 'h2', options: { uppercase: false } },
    { selector: 'h3', options: { uppercase: false } },
    { selector: 'h4', options: { uppercase: false } },
    { selector: 'h5', options: { uppercase: false } },
    { selector: 'h6', options: { uppercase: false } },
    { selector: 'table', format: 'dataTable', options: { uppercaseHeaderCells: false } },
  ],
};

/** Compiled once: `convert` would build the same formatter again for every value. */
const toText = compile(OPTIONS);

const LOOKS_LIKE_MARKUP = /<[a-z!/][^>]*>|&(#\d+|#x[0-9a-f]+|[a-z]+);/i;

/** Plain text of an HTML fragment (null and empty stay null); `max` cuts it to the field's length. */
export function plainTextOf(value: unknown, max = 1_000_000): string | null {
  if (value === null || value === undefined) return null;
  const source = typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : JSON.stringify(value);
  const text = LOOKS_LIKE_MARKUP.test(source) ? toText(source).trim() : source.trim();
  if (text === '') return null;
  return text.length > max ? text.slice(0, max) : text;
}
