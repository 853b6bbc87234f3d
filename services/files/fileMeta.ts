/** What a client says about an uploaded file, made safe to store and to send back in headers. */

const MAX_NAME_BYTES = 255;
// C0/C1 controls and the bidirectional overrides that make "txt.exe" display as "exe.txt".
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
// Reserved on Windows; replaced so a downloaded file keeps its name there too.
const RESERVED_CHARACTERS = /[<>:"|?*]/g;

/**
 * The last path segment of the client's file name (browsers and curl may send a path), without
 * control characters, at most 255 UTF-8 bytes (the extension kept), `file` when nothing is left.
 */
export function sanitiseFileName(raw: string | undefined | null): string {
  const segment = (raw ?? '').normalize('NFC').split(/[/\\]/).pop() ?? '';
  const cleaned = segment.replace(UNSAFE_CHARACTERS, '').replace(RESERVED_CHARACTERS, '_').trim();
  if (cleaned === '' || /^\.+$/.test(cleaned)) return 'file';
  return truncateKeepingExtension(cleaned);
}

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

function truncateKeepingExtension(name: string): string {
  if (bytes(name) <= MAX_NAME_BYTES) return name;
  const dot = name.lastIndexOf('.');
  const extension = dot > 0 && name.length - dot <= 16 ? name.slice(dot) : '';
  let base = [...name.slice(0, name.length - extension.length)];
  while (base.length > 0 && bytes(base.join('') + extension) > MAX_NAME_BYTES) base = base.slice(0, -1);
  return base.join('') + extension;
}

const MIME_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;
export const DEFAULT_MIME_TYPE = 'application/octet-stream';

/** `type/subtype` in lower case without parameters; anything malformed becomes application/octet-stream. */
export function normaliseMimeType(raw: string | undefined | null): string {
  const essence = (raw ?? '').split(';')[0].trim().toLowerCase();
  return MIME_TYPE.test(essence) ? essence : DEFAULT_MIME_TYPE;
}
