import { signedIn } from './api';
import { h, replace } from './dom';
import { errorBox, loginHref } from './layout';
import { importsPage } from './pages/imports';
import { loginPage } from './pages/login';
import { searchPage } from './pages/search';
import { adminOnlyPage, notFoundPage, startPage } from './pages/start';

/** Draws the page the address names; an administrator's page sends a visitor who is not signed in to sign in first. */
async function route(root: HTMLElement): Promise<void> {
  const user = await signedIn();
  const path = location.pathname.replace(/\/+$/, '') || '/';
  if (path === '/') return replace(root, startPage(user));
  if (path === '/login') return replace(root, loginPage(user));
  if (path === '/admin' || path.startsWith('/admin/')) {
    if (!user) return location.assign(loginHref());
    if (user.access !== 'ADMIN') return replace(root, adminOnlyPage(user));
    if (path === '/admin' || path === '/admin/imports') return replace(root, importsPage(user, null));
    if (path === '/admin/search') return replace(root, searchPage(user));
    const job = /^\/admin\/imports\/([1-9][0-9]{0,9})$/.exec(path);
    if (job) return replace(root, importsPage(user, Number(job[1])));
  }
  replace(root, notFoundPage(user));
}

const root = document.getElementById('app')!;
route(root).catch((err) => replace(root, h('main', { id: 'main' }, h('h1', null, 'Something went wrong'), errorBox(err))));
