// Hash routes: which view shows (#/NAME/ARG?QUERY), the navigation generation that stops
// a left view's timers, and the event stream the shown view follows.
import { api, describe, routes } from './api.js';
import { fill, h } from './dom.js';
import { renderAlarm } from './header.js';
import { session } from './session.js';

export const views = {};
let generation = 0; // bumped on every navigation; a view's timers stop when it changes

export function route() {
  const hash = location.hash.replace(/^#/, '') || '/';
  const [path, query] = hash.split('?');
  const params = new URLSearchParams(query || '');
  const parts = path.split('/').filter(Boolean);
  let name = parts[0] || 'overview';
  const arg = parts[1] ? decodeURIComponent(parts[1]) : '';
  if (!views[name]) name = 'notfound';
  generation++;
  const gen = generation;
  closeLive();
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('active', a.dataset.view === name || (name === 'message' && a.dataset.view === 'messages') || (name === 'flight' && a.dataset.view === 'flights'));
  }
  const view = document.getElementById('view');
  fill(view, h('p', { class: 'muted' }, 'Loading…'));
  if (name !== 'login' && session.checked && !session.user) {
    location.hash = '#/login?next=' + encodeURIComponent(hash);
    return;
  }
  if (session.user) api(routes.status).then(renderAlarm).catch(() => {});
  Promise.resolve(views[name]({ arg, params, gen, view })).catch(e => {
    if (gen !== generation) return;
    fill(view, h('p', { class: 'error', id: 'view-error' }, describe(e)));
  });
}

export function alive(gen) { return gen === generation; }

// go opens the view at path with params, those not empty, as its query.
export function go(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== '' && v !== null && v !== undefined) q.set(k, v);
  const s = q.toString();
  location.hash = '#' + path + (s ? '?' + s : '');
}

// liveSource is the open event stream of the view shown (route closes it on leaving).
let liveSource = null;

// openLive follows a list's event stream: onMessage for each arrival, onUpdate for each
// change of a row, onState with a word on the connection (EventSource reconnects by itself,
// resuming after the last arrival it got).
export function openLive(url, onMessage, onUpdate, onState) {
  closeLive();
  if (typeof EventSource !== 'function') { onState('(this browser cannot follow new rows)'); return; }
  const src = new EventSource(url);
  liveSource = src;
  const parse = (ev, fn) => { try { fn(JSON.parse(ev.data)); } catch (e) { /* a broken event is skipped */ } };
  src.addEventListener('message', ev => parse(ev, onMessage));
  src.addEventListener('update', ev => parse(ev, onUpdate));
  src.onopen = () => onState('live');
  src.onerror = () => onState(src.readyState === EventSource.CLOSED ? 'not live (reload to retry)' : 'reconnecting…');
}

function closeLive() {
  if (liveSource) { liveSource.close(); liveSource = null; }
}
