import { ApiError, post, type User } from '../api';
import { h, replace } from '../dom';
import { errorBox, frame } from '../layout';
import { returnAddress } from '../returnAddress';

/** Where to go after signing in: ?next= if it stays on this site (returnAddress), else the start page. */
export const nextPath = (): string => returnAddress(new URLSearchParams(location.search).get('next'), location);

/** `/login`: e-mail and password; a refusal is said above the form, which keeps the e-mail. */
export function loginPage(user: User | null): HTMLElement {
  const status = h('div', { class: 'status', 'aria-live': 'polite' });
  const email = h('input', { id: 'email', name: 'email', type: 'email', autocomplete: 'username', required: true });
  const password = h('input', { id: 'password', name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const submit = h('button', { type: 'submit' }, 'Sign in');
  const form = h('form', {
    class: 'card narrow', novalidate: true,
    onsubmit: async (e: Event) => {
      e.preventDefault();
      if (!email.value.trim() || !password.value) {
        replace(status, errorBox(new Error('Enter your e-mail and password.')));
        (email.value.trim() ? password : email).focus();
        return;
      }
      submit.disabled = true;
      replace(status, h('p', null, 'Signing in…'));
      try {
        await post('/api/auth/login', { email: email.value.trim(), password: password.value });
        location.assign(nextPath());
      } catch (err) {
        const shown = err instanceof ApiError && err.code === 'invalid-credentials' ? new Error('The e-mail or the password is wrong.') : err;
        replace(status, errorBox(shown));
        password.value = '';
        password.focus();
      } finally {
        submit.disabled = false;
      }
    },
  },
  status,
  h('div', { class: 'field' }, h('label', { for: 'email' }, 'E-mail'), email),
  h('div', { class: 'field' }, h('label', { for: 'password' }, 'Password'), password),
  submit);
  return frame(user, 'Sign in',
    user ? h('p', null, `You are signed in as ${user.name}. Signing in again replaces that session.`) : null,
    form);
}
