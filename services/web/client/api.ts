/** The public API, as these pages call it: same origin, the session cookie, JSON both ways. */

/** A refusal in the API's error shape ({ error, code, details }). */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly details: Record<string, unknown> = {}) {
    super(message);
  }
}

async function errorOf(res: Response): Promise<ApiError> {
  const body = await res.json().catch(() => null) as { error?: string; code?: string; details?: Record<string, unknown> } | null;
  return new ApiError(res.status, body?.code ?? `http-${res.status}`, body?.error ?? `The server answered ${res.status} ${res.statusText}`, body?.details ?? {});
}

export async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, {
      method, credentials: 'same-origin',
      headers: { Accept: 'application/json', ...(body !== undefined && { 'Content-Type': 'application/json' }) },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
  } catch {
    throw new ApiError(0, 'network-error', 'The server cannot be reached; check the connection and try again');
  }
  if (!res.ok) throw await errorOf(res);
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

export const get = <T>(path: string) => call<T>('GET', path);
export const post = <T>(path: string, body?: unknown) => call<T>('POST', path, body);
export const put = <T>(path: string, body?: unknown) => call<T>('PUT', path, body);

function parsed(text: string): { error?: string; code?: string; details?: Record<string, unknown> } | null {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** A multipart upload with its progress (fetch reports none): answers the JSON body. */
export function upload<T>(path: string, field: string, file: File, onProgress: (percent: number) => void): Promise<T> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', path);
    xhr.withCredentials = true;
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.upload.addEventListener('progress', (e) => {
      if (e.lengthComputable) onProgress((100 * e.loaded) / e.total);
    });
    xhr.addEventListener('load', () => {
      const body = parsed(xhr.responseText);
      if (xhr.status >= 200 && xhr.status < 300) resolve(body as T);
      else reject(new ApiError(xhr.status, body?.code ?? `http-${xhr.status}`, body?.error ?? `The server answered ${xhr.status}`, body?.details ?? {}));
    });
    xhr.addEventListener('error', () => reject(new ApiError(0, 'network-error', 'The upload was cut off; check the connection and try again')));
    const form = new FormData();
    form.append(field, file);
    xhr.send(form);
  });
}

export interface User { id: number; email: string; name: string; access: string }

/** The signed-in user, or null. */
export async function signedIn(): Promise<User | null> {
  try {
    return (await get<{ user: User }>('/api/auth/me')).user;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return null;
    throw err;
  }
}
