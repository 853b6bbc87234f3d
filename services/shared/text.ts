/**
 * Text this service accepts is text every store can hold. PostgreSQL's text and jsonb hold
 * neither the NUL character nor an unpaired UTF-16 surrogate (JSON's `"\ud800"` alone: jsonb
 * refuses it, a text parameter turns it into U+FFFD), so both are refused where text comes in.
 */

/** A high surrogate without a low one after it, or a low one without a high one before it (String.isWellFormed, ES2024). */
const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export const UNPAIRED_SURROGATE_MESSAGE = 'must not contain an unpaired UTF-16 surrogate (\\ud800 to \\udfff without its pair)';
export const NUL_MESSAGE = 'must not contain the NUL character (\\u0000)';

/** Why a string cannot be stored, or null when it can. */
export function textProblem(value: string): string | null {
  if (UNPAIRED_SURROGATE.test(value)) return UNPAIRED_SURROGATE_MESSAGE;
  if (value.includes('\u0000')) return NUL_MESSAGE;
  return null;
}

// eslint-disable-next-line no-control-regex -- matching NUL is the point
const UNSTORABLE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]|\u0000/g;
/** Cheap first look: any surrogate (paired ones too: emoji) or NUL. */
// eslint-disable-next-line no-control-regex -- matching NUL is the point
const MAYBE_UNSTORABLE = /[\u0000\ud800-\udfff]/;

/**
 * Text read from a file, made storable: each unpaired surrogate and NUL becomes U+FFFD, what a
 * UTF-8 encoder writes for an unpaired surrogate (a JSON file's `"\ud83d"`, from a title cut in
 * the middle of an emoji, reads as if the tool had written its title as UTF-8).
 */
export function storableText(value: string): string {
  return MAYBE_UNSTORABLE.test(value) ? value.replace(UNSTORABLE, '\ufffd') : value;
}

/** A step of the walk: the parent's step and the key that led here, so that a path is built only when needed. */
interface Step { parent: Step | null; key: string | number }

/** Steps named in a path at most: a body nested deeper is named by its first steps and an ellipsis. */
const MAX_PATH_STEPS = 64;

function pathOf(step: Step | null, base: string): string {
  const parts: (string | number)[] = [];
  for (let s = step; s; s = s.parent) parts.push(s.key);
  parts.reverse();
  let path = base;
  for (const part of parts.slice(0, MAX_PATH_STEPS)) path = typeof part === 'number' ? `${path}[${part}]` : path ? `${path}.${part}` : part;
  return parts.length > MAX_PATH_STEPS ? `${path}…` : path;
}

/**
 * The first string (or object key) in a JSON value that fails `problemOf`, with its path in the
 * form the validators use (`data.steps[2].title`), under `base`. Walks with its own stack: a body
 * nested a hundred thousand levels deep is refused elsewhere, not with a stack overflow here.
 */
export function findTextProblem(
  value: unknown, base = '', problemOf: (text: string) => string | null = textProblem,
): { path: string; problem: string } | null {
  const stack: { value: unknown; step: Step | null }[] = [{ value, step: null }];
  while (stack.length > 0) {
    const { value: current, step } = stack.pop()!;
    if (typeof current === 'string') {
      const problem = problemOf(current);
      if (problem) return { path: pathOf(step, base), problem };
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push({ value: current[i], step: { parent: step, key: i } });
    } else if (current !== null && typeof current === 'object') {
      const keys = Object.keys(current);
      for (const key of keys) {
        const problem = problemOf(key);
        if (problem) return { path: pathOf({ parent: step, key }, base), problem: `(the key) ${problem}` };
      }
      for (let i = keys.length - 1; i >= 0; i--) stack.push({ value: (current as Record<string, unknown>)[keys[i]], step: { parent: step, key: keys[i] } });
    }
  }
  return null;
}
