// #/login: the token form, exchanged for a session cookie.
import { api, describe, routes } from '../api.js';
import { fill, h } from '../dom.js';
import { loadSession, renderWho } from '../header.js';
import { session, setSession } from '../session.js';

export const loginView = ({ params, view }) => {
  const input = h('input', { id: 'login-token', type: 'password', autocomplete: 'current-password', required: true });
  const err = h('p', { class: 'error', id: 'login-error', hidden: true });
  const form = h('form', { class: 'login card', id: 'login-form' },
    h('h1', {}, 'Log in to msgx'),
    h('label', {}, 'Access token', input),
    err,
    h('button', { type: 'submit', class: 'primary', id: 'login-submit' }, 'Log in'),
    h('p', { class: 'muted' }, 'The token is one of auth.tokens (ask whoever runs msgx). It is exchanged for a session cookie; the console never stores it.'));
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    err.hidden = true;
    try {
      const res = await api(routes.login, { body: { token: input.value }, noRedirect: true });
      input.value = '';
      session.csrf = '';
      setSession(res);
      // A server whose log-in does not name the zone yet: ask GET /api/v1/me before the
      // first page, rather than show it in another zone.
      if (!res.timezone) await loadSession();
      renderWho();
      location.hash = '#' + (params.get('next') || '/');
    } catch (e) {
      err.textContent = e.status === 401 ? 'That token is not known.' : describe(e);
      err.hidden = false;
      input.value = '';
      input.focus();
    }
  });
  fill(view, form);
  input.focus();
};
