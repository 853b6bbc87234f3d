import { ApiError, get, post, type User } from './api';
import { type Child, h, replace, when } from './dom';

const NAV: Array<{ href: string; label: string; admin: boolean }> = [
  { href: '/', label: 'Start', admin: false },
  { href: '/admin/imports', label: 'Imports', admin: true },
  { href: '/admin/search', label: 'Search', admin: true },
  { href: '/docs/api', label: 'API documentation', admin: false },
];

/** The page frame: a skip link, the header (navigation, notifications, the user), and the main region with its heading. */
export function frame(user: User | null, title: string, ...content: Child[]): HTMLElement {
  document.title = `${title} · Testament`;
  const here = location.pathname;
  const links = NAV.filter((n) => !n.admin || user?.access === 'ADMIN').map((n) => {
    const current = n.href === here || (n.href !== '/' && here.startsWith(`${n.href}/`));
    return h('li', null, h('a', { href: n.href, ...(current && { 'aria-current': 'page' }) }, n.label));
  });
  const main = h('main', { id: 'main', tabindex: -1 }, h('h1', null, title), ...content);
  return h('div', { class: 'frame' },
    h('a', { class: 'skip', href: '#main' }, 'Skip to content'),
    h('header', { class: 'top' },
      h('a', { class: 'brand', href: '/' }, 'Testament'),
      h('nav', { 'aria-label': 'Main' }, h('ul', null, links)),
      h('div', { class: 'who' }, user ? [notifications(user), h('span', { class: 'user' }, user.name), signOutButton()] : h('a', { href: loginHref() }, 'Sign in'))),
    main);
}

export const loginHref = (next = location.pathname + location.search): string => (next === '/' || next.startsWith('/login') ? '/login' : `/login?next=${encodeURIComponent(next)}`);

function signOutButton(): HTMLElement {
  return h('button', {
    type: 'button', class: 'link',
    onclick: async () => {
      await post('/api/auth/logout').catch(() => undefined);
      location.assign('/login');
    },
  }, 'Sign out');
}

interface Notification {
  id: number; kind: string; title: string; body: string | null; link: string | null; subject: { type: string; id: number } | null; createdAt: string; readAt: string | null;
}

/** Where a notification leads on these pages: its subject's page when there is one, else its link when it is a path of this site. */
function hrefOf(n: Notification): string {
  if (n.subject?.type === 'externalImport') return `/admin/imports/${n.subject.id}`;
  return n.link && n.link.startsWith('/') && !n.link.startsWith('//') && !n.link.startsWith('/api/') ? n.link : '#';
}

/** The notifications indicator: unread count on a button that opens the latest ones; read when followed. */
function notifications(_user: User): HTMLElement {
  const button = h('button', { type: 'button', class: 'bell', 'aria-expanded': 'false', 'aria-controls': 'notifications' }, 'Notifications');
  const panel = h('div', { id: 'notifications', class: 'popover', hidden: true });
  const wrap = h('div', { class: 'notifications' }, button, panel);
  let latest: Notification[] = [];
  const refresh = async () => {
    try {
      const page = await get<{ data: Notification[]; unread: number }>('/api/notifications?take=8');
      latest = page.data;
      replace(button, 'Notifications', page.unread > 0 ? h('span', { class: 'badge' }, ` ${page.unread}`, h('span', { class: 'visually-hidden' }, ' unread')) : null);
      if (!panel.hidden) draw();
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) location.assign(loginHref());
    }
  };
  const draw = () => replace(panel, latest.length === 0 ? h('p', null, 'No notifications.') : h('ul', null, latest.map((n) => h('li', { class: n.readAt ? 'read' : 'unread' },
    h('a', {
      href: hrefOf(n),
      onclick: async (e: Event) => {
        // Marked read before leaving: a request cut by the navigation might not arrive.
        e.preventDefault();
        if (!n.readAt) await post(`/api/notifications/${n.id}/read`).catch(() => undefined);
        location.assign(hrefOf(n));
      },
    }, n.title),
    n.body ? h('p', null, n.body) : null,
    h('p', { class: 'meta' }, when(n.createdAt), n.readAt ? '' : ' · unread')))));
  button.addEventListener('click', () => {
    panel.hidden = !panel.hidden;
    button.setAttribute('aria-expanded', String(!panel.hidden));
    if (!panel.hidden) draw();
  });
  wrap.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && !panel.hidden) {
      panel.hidden = true;
      button.setAttribute('aria-expanded', 'false');
      button.focus();
    }
  });
  void refresh();
  window.setInterval(refresh, 15_000);
  return wrap;
}

/** An error said in words, announced to screen readers. */
export function errorBox(err: unknown): HTMLElement {
  const message = err instanceof ApiError ? err.message : err instanceof Error ? err.message : String(err);
  const code = err instanceof ApiError ? err.code : null;
  return h('div', { class: 'error', role: 'alert' }, h('p', null, message), code ? h('p', { class: 'meta' }, `code: ${code}`) : null);
}

export interface ActionOptions {
  /** The button's id (tests and labels find it by it). */
  id: string;
  /** Its class: '' for the page's main action, 'secondary' (default) or 'danger'. */
  cls?: string;
  /** Where the outcome is said: the operation's own answer, or its error. */
  status: HTMLElement;
  /** Asked first with window.confirm; nothing happens unless the user agrees. */
  confirm?: string;
  /** Said in `status` while it runs (default: the label and an ellipsis). */
  busy?: string;
  disabled?: boolean;
}

/** A button that runs an operation: disabled while it runs, the outcome said in `status`. */
export function action(label: string, run: () => Promise<Child>, o: ActionOptions): HTMLButtonElement {
  const button = h('button', { type: 'button', id: o.id, class: o.cls ?? 'secondary', disabled: o.disabled ?? false }, label);
  button.addEventListener('click', async () => {
    if (o.confirm !== undefined && !window.confirm(o.confirm)) return;
    button.disabled = true;
    replace(o.status, h('p', null, o.busy ?? `${label}…`));
    try {
      replace(o.status, await run());
    } catch (err) {
      replace(o.status, errorBox(err));
    } finally {
      button.disabled = false;
    }
  });
  return button;
}
