/**
 * Every request of the chaos load goes through one `Recorder`: it counts them by status, keeps each
 * 5xx (code, route, time) and each request that got no answer at all (connection refused or cut),
 * and the times of the answers that succeeded, from which the outages are measured.
 */

export interface Failure {
  at: number;
  method: string;
  route: string;
  /** The HTTP status, or 0: no answer (the connection was refused or cut). */
  status: number;
  /** The error body's `code`, or the network error's. */
  code: string;
}

export interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

export class Recorder {
  requests = 0;
  readonly byStatus = new Map<number, number>();
  readonly failures: Failure[] = [];
  /** When a request answered below 500 (the service was there). */
  readonly served: number[] = [];

  record(method: string, route: string, status: number, code: string): void {
    this.requests++;
    this.byStatus.set(status, (this.byStatus.get(status) ?? 0) + 1);
    const at = Date.now();
    if (status === 0 || status >= 500) this.failures.push({ at, method, route, status, code });
    else this.served.push(at);
  }
}

/** The route without ids and query, so that failures group by what was asked. */
function routeOf(path: string): string {
  return path.split('?')[0].replace(/\/\d+(?=\/|$)/g, '/:id');
}

/** A client of the API with a bearer token; every request recorded; never throws for a status or a refused connection. */
export class ChaosClient {
  constructor(private readonly base: () => string, readonly recorder: Recorder, public token: string | null = null) {}

  async request(method: string, path: string, body?: unknown, init: { form?: FormData; timeoutMs?: number } = {}): Promise<Answer> {
    const headers: Record<string, string> = { origin: new URL(this.base()).origin };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const route = routeOf(path);
    let res: Response;
    try {
      res = await fetch(this.base() + path, {
        method, headers, body: init.form ?? (body === undefined ? undefined : JSON.stringify(body)),
        signal: AbortSignal.timeout(init.timeoutMs ?? 60_000),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause;
      const code = cause?.code ?? (err as Error).name;
      this.recorder.record(method, route, 0, code);
      return { status: 0, body: { code }, headers: new Headers() };
    }
    let text = '';
    try {
      text = await res.text();
    } catch (err) {
      // The answer began, then the connection was cut.
      this.recorder.record(method, route, 0, (err as { cause?: { code?: string } }).cause?.code ?? 'body-cut');
      return { status: 0, body: { code: 'body-cut' }, headers: res.headers };
    }
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch { /* not JSON */ }
    this.recorder.record(method, route, res.status, res.status >= 400 ? String(parsed?.code ?? 'no-code') : '');
    return { status: res.status, body: parsed, headers: res.headers };
  }

  get(path: string) {
    return this.request('GET', path);
  }

  post(path: string, body?: unknown) {
    return this.request('POST', path, body);
  }

  /** Repeats a read until it answers below 500 (a dependency may be away), up to `ms`. */
  async until(method: string, path: string, body?: unknown, ms = 120_000): Promise<Answer> {
    const deadline = Date.now() + ms;
    for (;;) {
      const res = await this.request(method, path, body);
      if ((res.status > 0 && res.status < 500) || Date.now() > deadline) return res;
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  /** The raw fetch of a multipart upload whose answer is a stream (the JUnit import), recorded when its head arrives. */
  async upload(path: string, form: FormData): Promise<{ status: number; res: Response | null; code: string }> {
    const headers: Record<string, string> = { origin: new URL(this.base()).origin };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    const route = routeOf(path);
    try {
      const res = await fetch(this.base() + path, { method: 'POST', headers, body: form });
      let code = '';
      if (res.status >= 400) {
        const text = await res.text().catch(() => '');
        try {
          code = String(JSON.parse(text).code ?? 'no-code');
        } catch {
          code = 'no-code';
        }
      }
      this.recorder.record('POST', route, res.status, code);
      return { status: res.status, res, code };
    } catch (err) {
      const code = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
      this.recorder.record('POST', route, 0, code);
      return { status: 0, res: null, code };
    }
  }
}
