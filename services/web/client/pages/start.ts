import type { User } from '../api';
import { h } from '../dom';
import { frame, loginHref } from '../layout';

const version = () => document.querySelector('meta[name="testament-version"]')?.getAttribute('content') ?? 'unknown';

/** `/`: what this is, its version, and where to go. */
export function startPage(user: User | null): HTMLElement {
  return frame(user, 'Testament',
    h('p', { class: 'lead' }, 'Test management with a complete audit trail: every change is an event, nothing is overwritten or lost.'),
    h('p', null, `Version ${version()}.`),
    h('ul', { class: 'links' },
      user ? h('li', null, `Signed in as ${user.name} (${user.email}).`) : h('li', null, h('a', { href: loginHref('/') }, 'Sign in')),
      h('li', null, h('a', { href: '/admin/imports' }, 'Imports from another tool'), ' (administrators)'),
      h('li', null, h('a', { href: '/admin/search' }, 'Search administration'), ' (administrators)'),
      h('li', null, h('a', { href: '/docs/api' }, 'API documentation'), ': the data API, result imports, tokens')));
}

/** What a signed-in user without the ADMIN level sees on an administrator's page. */
export function adminOnlyPage(user: User): HTMLElement {
  return frame(user, 'Administrators only',
    h('p', null, `This page is for administrators. You are signed in as ${user.name} (${user.email}), without administrator access.`),
    h('p', null, h('a', { href: '/' }, 'Back to the start page')));
}

export function notFoundPage(user: User | null): HTMLElement {
  return frame(user, 'Page not found', h('p', null, 'There is no page at this address.'), h('p', null, h('a', { href: '/' }, 'Start page')));
}
