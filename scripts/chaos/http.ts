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

/** A JSON answer as parsed: its shape is checked where it is read (a check that finds it wrong fails the run). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the answers' shapes are checked where they are read
export type Json = any;

export interface Answer {
  status: number;
  body: Json;
  headers: Headers;
}

export class Recorder {
  requests = 0;
  readonly byStatus = new Map<number, number>();
  readonly failures: Failure[] = [];
  /** When a request answered below 500 (the service was there). */
  readonly served: number[] = [];
  /** Every answer in order: when, which route, and whether it was below 500. */
  readonly events: Array<{ at: number; route: string; ok: boolean }> = [];

  record(method: string, route: string, status: number, code: string): void {
    this.requests++;
    this.byStatus.set(status, (this.byStatus.get(status) ?? 0) + 1);
    const at = Date.now();
    const ok = status > 0 && status < 500;
    if (!ok) this.failures.push({ at, method, route, status, code });
    else this.served.push(at);
    this.events.push({ at, route: `${method} ${route}`, ok });
  }

  /**
   * The longest outage one kind of request saw between `start` and `end`: from a failure (5xx or
   * no answer) after which that route failed again and again until it next answered below 500.
   */
  longestOutage(start: number, end: number): { ms: number; route: string | null } {
    const downSince = new Map<string, number>();
    let longest = { ms: 0, route: null as string | null };
    let last = start;
    for (const e of this.events) {
      if (e.at < start || e.at > end) continue;
      last = e.at;
      if (!e.ok) {
        if (!downSince.has(e.route)) downSince.set(e.route, e.at);
        continue;
      }
      const since = downSince.get(e.route);
      if (since === undefined) continue;
      downSince.delete(e.route);
      if (e.at - since > longest.ms) longest = { ms: e.at - since, route: e.route };
    }
    for (const [route, since] of downSince) if (last - since > longest.ms) longest = { ms: last - since, route };
    return longest;
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
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      // The answer began, then the connection was cut.
      this.recorder.record(method, route, 0, (err as { cause?: { code?: string } }).cause?.code ?? 'body-cut');
      return { status: 0, body: { code: 'body-cut' }, headers: res.headers };
    }
    let parsed: Json = text;
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
