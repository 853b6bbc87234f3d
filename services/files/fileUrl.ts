/**
 * What an attachment's `url` may be (docs/access.md, "Files"): a stored file, named by
 * `/api/files/<key>` (as the upload answers) or by its bare key, or a link to an http(s) address.
 * Nothing a browser would run or resolve against this site (`javascript:`, `data:`, `../`, `//host`).
 */

const FILE_URL = /^(?:\/api\/files\/)?([a-f0-9]{64})$/;

/** The key of the stored file an attachment's url names, or null for a link. */
export function fileKeyOfUrl(url: unknown): string | null {
  return typeof url === 'string' ? (FILE_URL.exec(url)?.[1] ?? null) : null;
}

/** Why an attachment's url is refused, or null when it is a stored file or an absolute http(s) address. */
export function attachmentUrlProblem(url: string): string | null {
  if (fileKeyOfUrl(url) !== null) return null;
  const refused = 'url must be an http:// or https:// address, or a stored file (/api/files/<key>)';
  // The URL parser would drop or fix these silently; a browser given the text as it is might read it otherwise.
  // eslint-disable-next-line no-control-regex -- control characters are what it looks for
  if (/[\s\u0000-\u001f\u007f\\]/.test(url)) return `${refused}: no white space, control characters or backslashes`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return refused;
  }
  if ((parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.hostname === '' || !/^https?:\/\/[^/]/i.test(url)) return refused;
  return null;
}
