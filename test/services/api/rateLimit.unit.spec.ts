import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import express, { type NextFunction, type Request, type Response } from 'express';
import pino from 'pino';
import { errorHandler } from '../../../services/shared/http';
import {
  callerKey, clientAddress, CountLeases, keyOffset, leaseSize, LOGIN_TRIES_UNDER_ATTACK, loginEnforced, rateLimiters, secondsUntil, verdict, windowOf,
  type LimitState,
} from '../../../services/api/rateLimit';
import type { CounterWindow, RateLimitSettings, RateLimitStore } from '../../../services/shared/rateLimitStore';
import { ConfigError, loadConfig } from '../../../services/process/config';
import { emailDigest, loginAttemptsStream, normaliseEmail } from '../../../services/identity/loginAttempts';
import { HttpError } from '../../../services/shared/errors';

const MINUTE = 60_000;

describe('rate limits: the pure parts', () => {
  describe('windows', () => {
    it('a key\'s window holds the instant: start ≤ now < end, one window long', () => {
      for (const now of [0, 1, 59_999, 60_000, 1_780_000_123_456]) {
        for (const key of ['token:1', 'ip:127.0.0.1', 'login-email:ab']) {
          const w = windowOf(key, MINUTE, now);
          expect(w.start).to.be.at.most(now);
          expect(w.end).to.be.above(now);
          expect(w.end - w.start).to.equal(MINUTE);
        }
      }
    });

    it('every instant of a window gives the same window; its end starts the next', () => {
      const now = 1_780_000_123_456;
      const w = windowOf('token:7', MINUTE, now);
      expect(windowOf('token:7', MINUTE, w.start)).to.deep.equal(w);
      expect(windowOf('token:7', MINUTE, w.end - 1)).to.deep.equal(w);
      expect(windowOf('token:7', MINUTE, w.end)).to.deep.equal({ start: w.end, end: w.end + MINUTE });
      expect(windowOf('token:7', MINUTE, w.start - 1)).to.deep.equal({ start: w.start - MINUTE, end: w.start });
    });

    it('keys start their windows at offsets of their own, so that not every counter resets at once', () => {
      const offsets = new Set(Array.from({ length: 50 }, (_, i) => keyOffset(`token:${i}`, MINUTE)));
      expect(offsets.size).to.be.greaterThan(45);
      for (const o of offsets) expect(o).to.be.within(0, MINUTE - 1);
      expect(keyOffset('token:1', MINUTE)).to.equal(keyOffset('token:1', MINUTE));
      const start = windowOf('token:1', MINUTE, 1_780_000_123_456).start;
      expect(((start % MINUTE) + MINUTE) % MINUTE).to.equal(keyOffset('token:1', MINUTE));
    });

    it('Retry-After is whole seconds, rounded up, at least 1', () => {
      expect(secondsUntil(10_000, 0)).to.equal(10);
      expect(secondsUntil(10_001, 0)).to.equal(11);
      expect(secondsUntil(10_000, 9_999)).to.equal(1);
      expect(secondsUntil(10_000, 10_000)).to.equal(1);
    });
  });

  describe('verdict', () => {
    const state = (key: string, max: number, count: number, endsAt: number): LimitState => ({
      limit: { key, max, windowMs: MINUTE }, count, counter: { key, windowStart: new Date(endsAt - MINUTE), expiresAt: new Date(endsAt) },
    });

    it('shows the limit closest to exhaustion, and none is exceeded at the limit itself', () => {
      const ip = state('login-ip:a', 10, 3, 5_000);
      const email = state('login-email:b', 10, 10, 9_000);
      expect(verdict([ip, email])).to.deep.equal({ shown: email, exceeded: null });
    });

    it('over the limit: the exceeded limit that ends last, since a retry must wait for all of them', () => {
      const ip = state('login-ip:a', 10, 11, 5_000);
      const email = state('login-email:b', 10, 12, 9_000);
      const other = state('token:1', 100, 1, 99_000);
      expect(verdict([ip, email, other]).exceeded).to.equal(email);
      expect(verdict([email, ip, other]).exceeded).to.equal(email);
      expect(verdict([ip, email]).shown).to.equal(email);
    });
  });

  describe('which login counters refuse (loginEnforced)', () => {
    const state = (key: string, max: number, count: number): LimitState => ({
      limit: { key, max, windowMs: MINUTE }, count, counter: { key, windowStart: new Date(0), expiresAt: new Date(MINUTE) },
    });

    it('never the e-mail address\'s own counter, however far over its limit', () => {
      const byAddress = state('login-ip:a', 10, 1);
      const byEmail = state('login-email:b', 10, 500);
      const enforced = loginEnforced([byAddress, byEmail, state('login-ip-email:a:b', 10, 1)]);
      expect(enforced.map((s) => s.limit.key)).to.deep.equal(['login-ip:a', 'login-ip-email:a:b']);
      expect(verdict(enforced).exceeded).to.equal(null);
    });

    it('the address\'s attempts at an e-mail address: the login limit, or two while that e-mail address is over it', () => {
      const byAddress = state('login-ip:a', 10, 3);
      const pair = state('login-ip-email:a:b', 10, 3);
      expect(loginEnforced([byAddress, state('login-email:b', 10, 10), pair])[1]).to.equal(pair);
      const underAttack = loginEnforced([byAddress, state('login-email:b', 10, 11), pair]);
      expect(underAttack[1].limit.max).to.equal(LOGIN_TRIES_UNDER_ATTACK).and.equal(2);
      expect(verdict(underAttack).exceeded!.limit.key).to.equal('login-ip-email:a:b');
      expect(loginEnforced([byAddress, state('login-email:b', 1, 2), state('login-ip-email:a:b', 1, 1)])[1].limit.max, 'never above the limit').to.equal(1);
    });
  });

  describe('keys', () => {
    it('a bearer token counts by its token, a session by its user', () => {
      const user = { id: 3, email: 'ann@example.com', name: 'Ann', access: 'USER' as const };
      expect(callerKey({ user, tokenId: 9, via: 'api' })).to.equal('token:9');
      expect(callerKey({ user, via: 'session' })).to.equal('user:3');
    });

    it('addresses: IPv4 as it is (also IPv4-mapped), IPv6 by its /64, nothing known as "unknown"', () => {
      expect(clientAddress('203.0.113.9')).to.equal('203.0.113.9');
      expect(clientAddress('::ffff:203.0.113.9')).to.equal('203.0.113.9');
      expect(clientAddress('::ffff:cb00:7109')).to.equal('203.0.113.9');
      expect(clientAddress('2001:db8:1:2:3:4:5:6')).to.equal('2001:db8:1:2::/64');
      expect(clientAddress('2001:db8:1:2::99')).to.equal('2001:db8:1:2::/64');
      expect(clientAddress('2001:0db8:0001:0002:ffff::1')).to.equal('2001:db8:1:2::/64');
      expect(clientAddress('fe80::1%eth0')).to.equal('fe80:0:0:0::/64');
      expect(clientAddress('::1')).to.equal('0:0:0:0::/64');
      expect(clientAddress(undefined)).to.equal('unknown');
      expect(clientAddress('')).to.equal('unknown');
    });

    it('e-mail addresses are compared trimmed and in lower case, and named by a digest', () => {
      expect(normaliseEmail('  Ann@Example.COM ')).to.equal('ann@example.com');
      expect(emailDigest('ann@example.com')).to.match(/^[0-9a-f]{32}$/);
      expect(emailDigest('ann@example.com')).to.not.equal(emailDigest('bob@example.com'));
      expect(loginAttemptsStream('ann@example.com')).to.equal(`loginAttempts-${emailDigest('ann@example.com')}`);
      expect(emailDigest('abc'), 'SHA-256 of "abc", first 32 hex digits').to.equal('ba7816bf8f01cfea414140de5dae2223');
    });
  });

  describe('configuration (RATE_LIMIT_*, LOGIN_RATE_LIMIT_*)', () => {
    it('is on by default: 1200 requests a minute per token or user, 60 per address without credentials, 10 logins per 15 minutes', () => {
      expect(loadConfig({}).rateLimits).to.deep.equal({ windowMs: MINUTE, max: 1200, anonymousMax: 60, loginMax: 10, loginWindowMs: 15 * MINUTE });
      expect(Object.isFrozen(loadConfig({}).rateLimits)).to.equal(true);
    });

    it('takes every value from the environment', () => {
      expect(loadConfig({
        RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_WINDOW_MS: '10000', RATE_LIMIT_MAX: '50', RATE_LIMIT_ANONYMOUS_MAX: '5',
        LOGIN_RATE_LIMIT_MAX: '3', LOGIN_RATE_LIMIT_WINDOW_MS: '3600000',
      }).rateLimits).to.deep.equal({ windowMs: 10_000, max: 50, anonymousMax: 5, loginMax: 3, loginWindowMs: 3_600_000 });
    });

    it('RATE_LIMIT_ENABLED=false (or 0) switches limiting off', () => {
      expect(loadConfig({ RATE_LIMIT_ENABLED: 'false' }).rateLimits).to.equal(null);
      expect(loadConfig({ RATE_LIMIT_ENABLED: '0' }).rateLimits).to.equal(null);
      expect(loadConfig({ RATE_LIMIT_ENABLED: '1' }).rateLimits).to.not.equal(null);
    });

    const refused: [string, string][] = [
      ['RATE_LIMIT_ENABLED', 'off'], ['RATE_LIMIT_ENABLED', 'yes'],
      ['RATE_LIMIT_WINDOW_MS', '999'], ['RATE_LIMIT_WINDOW_MS', '86400001'], ['RATE_LIMIT_WINDOW_MS', '1.5'],
      ['RATE_LIMIT_MAX', '0'], ['RATE_LIMIT_MAX', '-5'], ['RATE_LIMIT_MAX', 'many'],
      ['RATE_LIMIT_ANONYMOUS_MAX', '0'], ['LOGIN_RATE_LIMIT_MAX', '0'], ['LOGIN_RATE_LIMIT_MAX', '2.5'],
      ['LOGIN_RATE_LIMIT_WINDOW_MS', '500'],
    ];
    for (const [name, value] of refused)
      it(`refuses ${name}=${value}`, () => expect(() => loadConfig({ [name]: value })).to.throw(ConfigError, new RegExp(name)));

    it('checks the limits even while limiting is off', () => {
      expect(() => loadConfig({ RATE_LIMIT_ENABLED: 'false', RATE_LIMIT_MAX: 'lots' })).to.throw(ConfigError, /RATE_LIMIT_MAX/);
    });
  });
});

/** A store in memory that records its calls; `failing` makes every call reject. */
class MemoryRateLimitStore implements RateLimitStore {
  readonly counts = new Map<string, number>();
  readonly calls: { op: string; keys: string[] }[] = [];
  failing = false;
  private id = (c: CounterWindow) => `${c.key}@${c.windowStart.toISOString()}`;
  async hit(counters: readonly CounterWindow[], by: readonly number[] = counters.map(() => 1)) {
    this.calls.push({ op: 'hit', keys: counters.map((c) => c.key) });
    if (this.failing) throw new Error('store down');
    return counters.map((c, i) => {
      this.counts.set(this.id(c), (this.counts.get(this.id(c)) ?? 0) + by[i]);
      return this.counts.get(this.id(c))!;
    });
  }
  async refund(counters: readonly CounterWindow[]) {
    this.calls.push({ op: 'refund', keys: counters.map((c) => c.key) });
    for (const c of counters) this.counts.set(this.id(c), Math.max(0, (this.counts.get(this.id(c)) ?? 0) - 1));
  }
  async prune() {
    this.calls.push({ op: 'prune', keys: [] });
    return 0;
  }
}

describe('rate limits: the middleware over a store that fails', () => {
  const settings: RateLimitSettings = { windowMs: MINUTE, max: 2, anonymousMax: 2, loginMax: 2, loginWindowMs: MINUTE };
  const store = new MemoryRateLimitStore();
  let server: Server;
  let url: string;
  let checked = 0;

  before(async () => {
    const limits = rateLimiters({ store, settings, clock: () => new Date('2026-06-01T12:00:00Z'), logger: pino({ level: 'silent' }) });
    const app = express();
    app.use(express.json());
    // A password check as the routes make it: counted first, the password looked at only when let through.
    app.post('/login', (req, res, next) => {
      limits.passwords.attempt(req, res, 'a@b.c').then(() => res.json({ ok: true, checked: ++checked }), next);
    });
    app.get('/open', limits.anonymous, (_req, res) => res.json({ ok: true }));
    app.get('/refused', (_req: Request, _res: Response, next: NextFunction) => next(new HttpError(401, 'unauthenticated', 'no')), ...limits.afterAuthentication);
    app.use(errorHandler(pino({ level: 'silent' })));
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise((r) => server.close(r)));
  beforeEach(() => {
    store.failing = true;
  });

  it('the general limits let requests through (the API stays up): no limit headers, a 401 stays a 401', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${url}/open`);
      expect(res.status).to.equal(200);
      expect(res.headers.get('ratelimit-limit')).to.equal(null);
    }
    const refused = await fetch(`${url}/refused`);
    expect(refused.status).to.equal(401);
    expect(((await refused.json()) as { code: string }).code).to.equal('unauthenticated');
  });

  it('the password limit fails closed: no password is checked while its counters cannot be read', async () => {
    const res = await fetch(`${url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'a@b.c' }) });
    expect(res.status).to.equal(500);
    expect(((await res.json()) as { code: string }).code).to.equal('internal-error');
    expect(checked).to.equal(0);
  });

  it('once the store answers again, the limits count', async () => {
    store.failing = false;
    expect((await fetch(`${url}/open`)).status).to.equal(200);
    expect((await fetch(`${url}/open`)).status).to.equal(200);
    const third = await fetch(`${url}/open`);
    expect(third.status).to.equal(429);
    expect(store.calls.filter((c) => c.op === 'hit').at(-1)!.keys).to.deep.equal(['ip:127.0.0.1']);
  });
});

describe('rate limits: counts leased ahead for the large per-caller limits', () => {
  const window = (start: number): CounterWindow => ({ key: 'token:1', windowStart: new Date(start), expiresAt: new Date(start + MINUTE) });

  it('leases one count at a time for the small, strict limits, a twentieth (at most 100) for large ones', () => {
    expect([2, 10, 60, 99].map(leaseSize)).to.deep.equal([1, 1, 1, 1]);
    expect([100, 1200, 5000].map(leaseSize)).to.deep.equal([5, 60, 100]);
  });

  it('numbers the requests 1, 2, 3, ... with one store round trip per block', async () => {
    const store = new MemoryRateLimitStore();
    const leases = new CountLeases(store);
    const numbers: number[] = [];
    for (let i = 0; i < 12; i++) numbers.push(await leases.take(window(0), 5));
    expect(numbers).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(store.calls.filter((c) => c.op === 'hit').length).to.equal(3);
  });

  it('concurrent requests wait for the lease in flight instead of each taking a block', async () => {
    const store = new MemoryRateLimitStore();
    const leases = new CountLeases(store);
    const numbers = await Promise.all(Array.from({ length: 5 }, () => leases.take(window(0), 5)));
    expect([...numbers].sort((a, b) => a - b)).to.deep.equal([1, 2, 3, 4, 5]);
    expect(store.calls.length).to.equal(1);
  });

  it('several replicas never hand out the same number: at most max requests get a number within the limit', async () => {
    const store = new MemoryRateLimitStore();
    const replicas = [new CountLeases(store), new CountLeases(store), new CountLeases(store)];
    const numbers: number[] = [];
    for (let i = 0; i < 40; i++) numbers.push(await replicas[(i * 7) % 3].take(window(0), 5));
    expect(new Set(numbers).size, 'each number once').to.equal(numbers.length);
    const max = 20;
    expect(numbers.filter((n) => n <= max).length).to.be.at.most(max);
  });

  it('a new window starts a new block', async () => {
    const store = new MemoryRateLimitStore();
    const leases = new CountLeases(store);
    expect(await leases.take(window(0), 5)).to.equal(1);
    expect(await leases.take(window(0), 5)).to.equal(2);
    expect(await leases.take(window(MINUTE), 5)).to.equal(1);
  });
});
