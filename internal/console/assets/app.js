// msgx console: one page, hash routes, plain DOM. Every piece of server data is written with
// textContent or setAttribute through h() below, never as markup.
'use strict';

// ---- API routes the console uses (the server's own JSON API) -------------------------------
const API = {
  login: '/api/v1/login',
  logout: '/api/v1/logout',
  me: '/api/v1/me',
  status: '/api/v1/status',
  throughput: '/api/v1/console/throughput',
  messages: '/api/v1/messages',
  message: id => `/api/v1/messages/${encodeURIComponent(id)}`,
  raw: id => `/api/v1/messages/${encodeURIComponent(id)}/raw`,
  history: id => `/api/v1/messages/${encodeURIComponent(id)}/history`,
  decoded: id => `/api/v1/console/messages/${encodeURIComponent(id)}/decoded`,
  park: id => `/api/v1/messages/${encodeURIComponent(id)}/park`,
  replay: '/api/v1/replay',
  events: '/api/v1/events',
  eventsReplay: '/api/v1/events/replay',
  flights: '/api/v1/flights',
  flight: flid => `/api/v1/flights/${encodeURIComponent(flid)}`,
  find: '/api/v1/find',
  flightHistory: flid => `/api/v1/flights/${encodeURIComponent(flid)}/history`,
  requests: '/api/v1/requests',
  jobs: '/api/v1/jobs',
  jobKinds: '/api/v1/jobs/kinds',
  dead: '/api/v1/dead',
  deadAck: '/api/v1/dead/ack',
  audit: '/api/v1/audit',
  pump: verb => `/api/v1/pump/${verb}`,
  target: (name, verb) => `/api/v1/targets/${encodeURIComponent(name)}/${verb}`,
};
const CSRF_HEADER = 'X-CSRF-Token';
const REFRESH_MS = 3000;
const STATES = ['PENDING', 'FAILED', 'DEAD', 'SUCCEEDED', 'SKIPPED'];
const CLASSES = ['MALFORMED', 'CODEC_ERROR', 'UNSUPPORTED', 'ORPHAN', 'INFRA', 'EXHAUSTED', 'PARKED', 'REJECTED'];
const RAW_SHOW_BYTES = 1 << 20;

// ---- DOM helpers ---------------------------------------------------------------------------

// h builds an element. props: class, text, on<event>, anything else as an attribute; children
// are nodes or values shown as text.
function h(tag, props, ...kids) {
  const el = document.createElement(tag);
  setProps(el, props);
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

function setProps(el, props) {
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.setAttribute('class', v);
    else if (k === 'text') el.textContent = String(v);
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

// fill replaces el's children with kids (nodes or text; null, undefined and false are left out).
function fill(el, ...kids) {
  el.replaceChildren();
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

function svg(tag, attrs, ...kids) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const kid of kids.flat()) if (kid) el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  return el;
}

// link returns an in-console link; path is built from numbers and encoded parts only.
function link(path, text) { return h('a', { href: '#' + path }, text); }
function msgLink(id) { return link('/message/' + encodeURIComponent(id), String(id)); }
function flightLink(flid) { return link('/flight/' + encodeURIComponent(flid), String(flid)); }
function stateSpan(st) { return h('span', { class: 'state-' + String(st || '').replace(/[^A-Z_]/g, '') }, st || ''); }

// ---- airport time ---------------------------------------------------------------------------
// Every time the console shows is airport time: the zone (sis.timezone) that the log-in and
// GET /api/v1/me answer, named in the header on every page. Never the browser's zone: a
// console in a UTC browser showed "Received 02:07" for a message taken at 10:07.

// zone is the airport's zone, UTC until the server has named it.
function zone() { return session.tz || 'UTC'; }

// RFC3339 matches a full timestamp as the API writes it (UTC "…Z" or with an offset).
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/;

// fmtTime shows s in airport time, "2026-12-04 10:07:00".
function fmtTime(s) {
  if (!s) return '';
  const z = zoneParts(s, zone());
  return z ? `${z.day} ${z.hms}` : String(s);
}

// timeEl is fmtTime(s) in an element whose tooltip names the zone.
function timeEl(s) {
  if (!s) return '';
  return h('time', { datetime: s, title: 'airport time, ' + zone() }, fmtTime(s));
}

// zoneFields returns the calendar fields of instant d in zone tz (numbers), or null.
function zoneFields(d, tz) {
  let parts;
  try {
    parts = zoneFormat(tz).formatToParts(d);
  } catch (e) {
    return null;
  }
  const p = Object.fromEntries(parts.map(x => [x.type, Number(x.value)]));
  return { y: p.year, mo: p.month, d: p.day, h: p.hour, mi: p.minute, s: p.second };
}

const zoneFormats = new Map();
function zoneFormat(tz) {
  let f = zoneFormats.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit',
      hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
    zoneFormats.set(tz, f);
  }
  return f;
}

// zoneOffsetMin is zone tz's offset from UTC at instant ms, in minutes (480 for +08:00).
function zoneOffsetMin(ms, tz) {
  const f = zoneFields(new Date(ms), tz);
  if (!f) return 0;
  return Math.round((Date.UTC(f.y, f.mo - 1, f.d, f.h, f.mi, f.s) - Math.floor(ms / 1000) * 1000) / 60000);
}

// localISO writes an RFC 3339 time as the same instant in airport time with its offset
// ("2026-12-04T10:07:00+08:00"), for the JSON the console shows (decoded messages, payloads).
function localISO(s) {
  const d = new Date(s);
  const z = zoneParts(s, zone());
  if (!z || isNaN(d)) return s;
  const off = zoneOffsetMin(d.getTime(), zone());
  const p = n => String(Math.floor(Math.abs(n))).padStart(2, '0');
  return `${z.day}T${z.hms}${off === 0 ? 'Z' : (off < 0 ? '-' : '+') + p(off / 60) + ':' + p(off % 60)}`;
}

// jsonText is JSON for reading, with every RFC 3339 time in airport time.
function jsonText(v) {
  return JSON.stringify(v, (k, x) => typeof x === 'string' && RFC3339.test(x) ? localISO(x) : x, 2);
}

// INNER_TIME finds RFC 3339 times inside a server's text (a head's "next attempt
// 2026-12-04T02:07:00Z", an error, a note).
const INNER_TIME = /\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)/g;

// srvText is a server's free text with every RFC 3339 time in it written in airport time.
function srvText(s) {
  if (s === null || s === undefined) return '';
  return String(s).replace(INNER_TIME, t => fmtTime(t));
}

// airportInstant reads "YYYY-MM-DD", "YYYY-MM-DD HH:MM" or "YYYY-MM-DDTHH:MM[:SS]" as airport
// time (or an RFC 3339 time with its own zone) and returns the instant, or null.
function airportInstant(text) {
  const t = String(text || '').trim();
  if (RFC3339.test(t)) return new Date(t);
  const m = /^(\d{4})-(\d\d)-(\d\d)(?:[ T](\d\d):(\d\d)(?::(\d\d))?)?$/.exec(t);
  if (!m) return null;
  const [y, mo, d, hh, mi, ss] = m.slice(1).map(x => Number(x || 0));
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || hh > 23 || mi > 59 || ss > 59) return null;
  const wall = Date.UTC(y, mo - 1, d, hh, mi, ss);
  // The offset at the wall time read as UTC, then at the instant that gives (a zone change
  // between them moves it once more).
  let at = wall - zoneOffsetMin(wall, zone()) * 60000;
  at = wall - zoneOffsetMin(at, zone()) * 60000;
  return new Date(at);
}

// isoDay says whether s is a date written YYYY-MM-DD that exists.
function isoDay(s) {
  const m = /^(\d{4})-(\d\d)-(\d\d)$/.exec(String(s || ''));
  if (!m) return false;
  const d = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3]));
  return d.getUTCFullYear() === +m[1] && d.getUTCMonth() === +m[2] - 1 && d.getUTCDate() === +m[3];
}

// addDays moves an ISO day by n days.
function addDays(day, n) {
  const [y, m, d] = day.split('-').map(Number);
  return new Date(Date.UTC(y, m - 1, d + n)).toISOString().slice(0, 10);
}

function fmtAge(seconds) {
  if (seconds === null || seconds === undefined || isNaN(seconds)) return '';
  seconds = Math.max(0, Math.round(seconds));
  if (seconds < 60) return seconds + 's';
  if (seconds < 3600) return Math.floor(seconds / 60) + 'm ' + (seconds % 60) + 's';
  if (seconds < 86400) return Math.floor(seconds / 3600) + 'h ' + Math.floor(seconds % 3600 / 60) + 'm';
  return Math.floor(seconds / 86400) + 'd ' + Math.floor(seconds % 86400 / 3600) + 'h';
}

function ago(s) {
  if (!s) return '';
  const d = new Date(s);
  return isNaN(d) ? '' : fmtAge((Date.now() - d.getTime()) / 1000) + ' ago';
}

function flash(text, isError) {
  const box = document.getElementById('flash');
  const m = h('div', { class: 'msg' + (isError ? ' error' : ''), role: isError ? 'alert' : 'status' }, text);
  box.append(m);
  setTimeout(() => m.remove(), isError ? 12000 : 6000);
}

// table renders rows (objects) with columns [{head, cell(row) → node|text, class}].
function table(cols, rows, opts) {
  opts = opts || {};
  if (!rows || rows.length === 0) return h('p', { class: 'muted' }, opts.empty || 'Nothing here.');
  return h('table', { id: opts.id },
    h('thead', {}, h('tr', {}, cols.map(c => h('th', { class: c.class }, c.head)))),
    h('tbody', {}, rows.map(r => h('tr', { 'data-id': opts.rowId ? opts.rowId(r) : null, class: opts.rowClass ? opts.rowClass(r) : null },
      cols.map(c => h('td', { class: c.class }, c.cell(r)))))));
}

// anyValue shows a value of a shape the console does not know in advance: an array of
// objects as a table, an object as key/value pairs, anything else as text.
function anyValue(v) {
  if (v === null || v === undefined) return h('span', { class: 'muted' }, '—');
  if (Array.isArray(v)) {
    if (v.length === 0) return h('span', { class: 'muted' }, 'none');
    if (v.every(x => x && typeof x === 'object' && !Array.isArray(x))) {
      const keys = [...new Set(v.flatMap(Object.keys))];
      return table(keys.map(k => ({ head: k, cell: r => cellValue(k, r[k]) })), v);
    }
    return h('span', {}, v.map(x => typeof x === 'object' ? jsonText(x) : RFC3339.test(String(x)) ? fmtTime(x) : String(x)).join(', '));
  }
  if (typeof v === 'object') {
    return h('dl', { class: 'kv' }, Object.entries(v).flatMap(([k, x]) => [h('dt', {}, k), h('dd', {}, cellValue(k, x))]));
  }
  return String(v);
}

function cellValue(key, v) {
  if (v === null || v === undefined) return '';
  if (/msg_id$/.test(key) && typeof v === 'number') return msgLink(v);
  if (key === 'state' && typeof v === 'string') return stateSpan(v);
  if (typeof v === 'string' && RFC3339.test(v)) return timeEl(v);
  if (typeof v === 'object') return h('code', {}, jsonText(v).replace(/\s*\n\s*/g, ' '));
  return typeof v === 'string' ? srvText(v) : String(v);
}

// ---- API ------------------------------------------------------------------------------------

// APIError is a failed call: status is the HTTP status (0: no answer), path the route called.
class APIError extends Error {
  constructor(status, message, code, path) { super(message); this.status = status; this.code = code; this.path = path; }
}

// api calls the JSON API. State-changing calls carry the CSRF token that the login (or
// GET /api/v1/me after a reload) gave; the session cookie itself is HttpOnly. A 401 sends the
// user to the login page. An answer that is not JSON (a 200 as much as an error) fails the call
// with the route named: it is never shown as if it were an empty answer.
async function api(method, path, body, opts) {
  opts = opts || {};
  const init = { method, credentials: 'same-origin', headers: { Accept: opts.text ? '*/*' : 'application/json' } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  if (method !== 'GET' && method !== 'HEAD') {
    if (session.csrf) init.headers[CSRF_HEADER] = session.csrf;
  }
  let r;
  try {
    r = await fetch(path, init);
  } catch (e) {
    throw new APIError(0, 'the server does not answer (' + e.message + ')', 'network', path);
  }
  let text;
  try {
    text = await r.text();
  } catch (e) {
    throw new APIError(r.status, `${path}: the answer broke off (${e.message})`, 'network', path);
  }
  let data = text, invalid = null;
  if (!opts.text || !r.ok) { try { data = JSON.parse(text); } catch (e) { data = text; invalid = e; } }
  if (r.status === 401 && !opts.noRedirect) {
    session.user = null;
    renderWho();
    if (!location.hash.startsWith('#/login')) {
      location.hash = '#/login?next=' + encodeURIComponent(location.hash.slice(1) || '/');
    }
  }
  if (!r.ok) {
    const msg = data && typeof data === 'object' && data.error ? data.error : (String(text).slice(0, 300) || r.statusText);
    throw new APIError(r.status, msg, data && data.code, path);
  }
  if (invalid) {
    throw new APIError(r.status, `${path}: invalid answer (${invalid.message}): ${String(text).slice(0, 120)}`, 'invalid_answer', path);
  }
  return data;
}

// ---- session --------------------------------------------------------------------------------

// session.user is {name, role} once known; role decides which actions are shown (the server
// decides what is allowed). auth is false when the server has no tokens and answers loopback
// clients only (no login, no logout).
const session = { user: null, csrf: '', auth: true, checked: false, tz: '' };
const ROLE_RANK = { viewer: 1, operator: 2, admin: 3 };

function can(role) {
  if (!session.user) return false;
  return (ROLE_RANK[session.user.role] || 0) >= ROLE_RANK[role];
}

// setSession takes the answer of the log-in or of GET /api/v1/me: who, the CSRF token, and the
// airport's zone, so that the first page after logging in shows airport time.
function setSession(me) {
  session.user = { name: me.name || 'unknown', role: me.role || 'viewer' };
  if (me.csrf_token) session.csrf = me.csrf_token;
  session.auth = me.via !== 'loopback';
  if (me.timezone) session.tz = me.timezone;
}

async function loadSession() {
  try {
    setSession(await api('GET', API.me, undefined, { noRedirect: true }));
  } catch (e) {
    session.user = null;
    if (e.status !== 401) flash('Who you are is unknown: ' + describe(e), true);
  }
  session.checked = true;
  renderWho();
}

function renderWho() {
  const el = document.getElementById('who');
  fill(el);
  for (const a of document.querySelectorAll('#nav a[data-role]')) a.hidden = !can(a.dataset.role);
  if (!session.user) {
    el.append(link('/login', 'Log in'));
    return;
  }
  // fill, not append: append writes a left-out part as the text "null".
  fill(el, h('span', { id: 'who-name' }, session.user.name), ' ',
    h('span', { id: 'who-role', class: 'muted' }, '(' + session.user.role + ')'), ' ',
    h('span', { id: 'who-zone', class: 'zone', title: 'every time the console shows is airport time (sis.timezone)' }, 'airport time ' + zone()),
    session.auth ? h('button', { id: 'logout', type: 'button', onclick: logout }, 'Log out') : null);
}

async function logout() {
  try { await api('POST', API.logout, {}, { noRedirect: true }); } catch (e) { /* already out */ }
  session.user = null;
  session.csrf = '';
  renderWho();
  location.hash = '#/login';
}

// ---- confirmation modal -----------------------------------------------------------------------

// confirmAction shows the modal with body (nodes); on Confirm it runs act(reason) and closes
// when it succeeds, or shows its error and stays open. It resolves to act's result or null.
function confirmAction({ title, body, reason, confirmText, act }) {
  const modal = document.getElementById('modal');
  const reasonLabel = document.getElementById('modal-reason-label');
  const reasonInput = document.getElementById('modal-reason');
  const err = document.getElementById('modal-error');
  const ok = document.getElementById('modal-confirm');
  const cancel = document.getElementById('modal-cancel');
  document.getElementById('modal-title').textContent = title;
  document.getElementById('modal-body').replaceChildren(...[].concat(body || []).map(b => b instanceof Node ? b : h('p', {}, b)));
  reasonLabel.hidden = !reason;
  reasonInput.value = '';
  err.hidden = true;
  ok.textContent = confirmText || 'Confirm';
  ok.disabled = false;
  modal.hidden = false;
  (reason ? reasonInput : ok).focus();
  return new Promise(resolve => {
    const close = v => {
      modal.hidden = true;
      ok.onclick = cancel.onclick = null;
      resolve(v);
    };
    cancel.onclick = () => close(null);
    ok.onclick = async () => {
      const why = reasonInput.value.trim();
      if (reason && !why) {
        err.textContent = 'Give a reason: it is kept with the message and in the audit log.';
        err.hidden = false;
        return;
      }
      ok.disabled = true;
      try {
        const res = await act(why);
        close(res === undefined ? true : res);
      } catch (e) {
        err.textContent = describe(e);
        err.hidden = false;
        ok.disabled = false;
      }
    };
  });
}

function describe(e) {
  if (e instanceof APIError) {
    if (e.status === 403 && e.code === 'csrf') return 'Refused as a possible cross-site request (' + e.message + '); reload the page and try again.';
    if (e.status === 403) return 'Not allowed: ' + e.message;
    if (e.status === 404 && e.code === 'not_found' && /no route/.test(e.message)) return 'This server does not offer that yet (' + e.message + ')';
    return e.message + (e.status ? ` (HTTP ${e.status})` : '');
  }
  return String(e && e.message || e);
}

// failedRoute says what failed, naming the route: "/api/v1/status: invalid answer (…)".
function failedRoute(path, e) {
  const d = describe(e);
  return d.startsWith(path) ? d : path + ': ' + d;
}

// ---- routing ----------------------------------------------------------------------------------

const views = {};
let generation = 0; // bumped on every navigation; a view's timers stop when it changes

function route() {
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
  if (session.user) api('GET', API.status).then(renderAlarm).catch(() => {});
  Promise.resolve(views[name]({ arg, params, gen, view })).catch(e => {
    if (gen !== generation) return;
    fill(view, h('p', { class: 'error', id: 'view-error' }, describe(e)));
  });
}

function alive(gen) { return gen === generation; }

// renderAlarm shows in the header, on every page, what stops work: the pump halted (phase A:
// Redis lost data) or paused (for how long, by whom, why), and the paused targets; hidden
// while everything runs. The overview renders it at each refresh, every other page on arrival.
function renderAlarm(st) {
  const el = document.getElementById('alarm');
  const halted = st.extra && st.extra.pump_halted;
  const pump = st.pump_paused;
  const targets = (st.paused || []).filter(p => p.name.startsWith('target:')).map(p => p.name.slice(7));
  let text = halted ? 'HALTED: ' + srvText(halted.reason)
    : pump ? `PAUSED for ${fmtAge((Date.now() - new Date(pump.paused_at).getTime()) / 1000)} by ${pump.paused_by}` + (pump.reason ? ': ' + pump.reason : '')
    : '';
  if (targets.length) text += (text ? '; ' : '') + 'paused: ' + targets.join(', ');
  el.textContent = text;
  el.classList.toggle('halted', !!halted);
  el.hidden = !text;
}

// setQuery changes the current route's query without adding a history entry per keystroke.
function go(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== '' && v !== null && v !== undefined) q.set(k, v);
  const s = q.toString();
  location.hash = '#' + path + (s ? '?' + s : '');
}

// ---- login --------------------------------------------------------------------------------------

views.login = ({ params, view }) => {
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
      const res = await api('POST', API.login, { token: input.value }, { noRedirect: true });
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

views.notfound = ({ view }) => fill(view, h('p', {}, 'No such page. ', link('/', 'Back to the overview')));

// ---- overview ---------------------------------------------------------------------------------

views.overview = async ({ gen, view }) => {
  const counts = h('div', { class: 'cards', id: 'counts' });
  const pump = h('section', { class: 'card', id: 'pump' });
  const head = h('section', { class: 'card', id: 'head' });
  const chart = h('section', { class: 'card', id: 'throughput' });
  const targets = h('section', { class: 'card', id: 'targets' });
  const recent = h('section', { class: 'card', id: 'recent' });
  const updated = h('p', { class: 'muted', id: 'updated' });
  // A failed refresh shows the banner, naming the route, and keeps the last good figures,
  // marked stale: never zero counts or "nothing waits" from an answer that did not come.
  const banner = h('div', { class: 'banner', id: 'status-error', role: 'alert', hidden: true });
  const figures = [counts, head, pump, targets, recent];
  fill(view, h('h1', {}, 'Overview'), banner, counts, head, pump, chart, targets, recent, updated);
  for (const el of [...figures, chart]) el.hidden = true; // until the first good answer
  let tick = 0, goodAt = null;
  const refresh = async () => {
    if (!alive(gen)) return;
    try {
      const st = await api('GET', API.status);
      if (!alive(gen)) return;
      if (!st || typeof st !== 'object' || !st.counts || typeof st.counts !== 'object') {
        throw new APIError(200, `${API.status}: invalid answer (no counts): ${JSON.stringify(st).slice(0, 120)}`, 'invalid_answer', API.status);
      }
      renderCounts(counts, st);
      renderHead(head, st);
      renderPump(pump, st);
      renderTargets(targets, st);
      renderRecent(recent, st);
      renderAlarm(st);
      if (tick % 5 === 0) {
        api('GET', API.throughput).then(tp => alive(gen) && renderThroughput(chart, tp))
          .catch(e => alive(gen) && fill(chart, h('h2', {}, 'Throughput'), h('p', { class: 'muted' }, describe(e))));
      }
      tick++;
      goodAt = new Date().toISOString();
      updated.textContent = 'Updated ' + fmtTime(goodAt) + '; refreshes every ' + REFRESH_MS / 1000 + ' s.';
      updated.classList.remove('error');
      banner.hidden = true;
      for (const el of [...figures, chart]) { el.classList.remove('stale'); el.hidden = false; }
    } catch (e) {
      if (!alive(gen)) return;
      const what = failedRoute(API.status, e);
      fill(banner, h('b', {}, 'Status unknown: '), what,
        h('div', { id: 'stale-note' }, goodAt ? `The figures below are stale: the last good answer was at ${fmtTime(goodAt)}.` : 'No figures yet: no good answer so far.'));
      banner.hidden = false;
      if (goodAt) for (const el of figures) el.classList.add('stale');
      updated.textContent = 'Could not refresh: ' + what;
      updated.classList.add('error');
    }
    setTimeout(refresh, REFRESH_MS);
  };
  await refresh();
};

// renderCounts shows the messages per state; DEAD counts only the dead letters nobody has
// acknowledged yet (the acknowledged ones are kept for audit and said apart, in grey).
function renderCounts(el, st) {
  const c = st.counts || {};
  const dead = st.extra && st.extra.dead && st.extra.dead.messages;
  fill(el, ...STATES.map(s => {
    const acked = s === 'DEAD' && dead ? dead.acknowledged : 0;
    const n = s === 'DEAD' && dead ? dead.unacknowledged : (c[s] || 0);
    return h('a', { class: 'count', href: s === 'DEAD' ? '#/dead' : '#/messages?state=' + s, id: 'count-' + s },
      h('b', { class: n ? 'state-' + s : 'muted' }, String(n)), s,
      acked ? h('span', { class: 'muted', id: 'count-DEAD-acked' }, ` (+${acked} acknowledged)`) : null);
  }));
}

function renderHead(el, st) {
  const hd = st.head;
  const kids = [h('h2', {}, 'Head of the queue')];
  if (!hd) {
    kids.push(h('p', { class: 'why idle', id: 'head-why' }, 'Nothing waits: every message is finished.'));
  } else {
    kids.push(h('p', { class: 'why', id: 'head-why' }, srvText(hd.why)));
    kids.push(h('dl', { class: 'kv' },
      h('dt', {}, 'Message'), h('dd', { id: 'head-id' }, msgLink(hd.id), ' ', hd.type_tag || '', ' ', h('span', { class: 'muted' }, hd.identity || '')),
      h('dt', {}, 'State'), h('dd', {}, stateSpan(hd.state), hd.error_class ? ' ' + hd.error_class : '', ` after ${hd.attempts} attempt(s)`),
      hd.last_error ? [h('dt', {}, 'Last error'), h('dd', { class: 'error' }, srvText(hd.last_error))] : null,
      h('dt', {}, 'Received'), h('dd', {}, timeEl(hd.received_at), ' ', h('span', { class: 'muted' }, ago(hd.received_at)))));
    if (can('operator')) kids.push(h('div', { class: 'actions' }, parkButton(hd.id, 'head-park')));
  }
  const halted = st.extra && st.extra.pump_halted;
  if (halted) {
    kids.push(h('p', { class: 'error', id: 'pump-halted' },
      `The pump applies nothing since ${fmtTime(halted.since)}: ${srvText(halted.reason)}. Run REDIS_RESTORE (Jobs) to write FLIGHT_STATE back into Redis; the pump then resumes by itself.`));
  }
  const trouble = st.extra && st.extra.pump_trouble;
  if (trouble) {
    kids.push(h('p', { class: 'error', id: 'pump-trouble' },
      `The pump cannot record the outcome of message ${trouble.msg_id}: ${trouble.failures} failure(s) since ${fmtTime(trouble.since)}, next try ${fmtTime(trouble.next_attempt_at)}: ${srvText(trouble.last_error)}`));
  }
  fill(el, ...kids);
}

function renderPump(el, st) {
  const ex = st.extra || {};
  const pumpPause = st.pump_paused || null;
  const pausedTargets = (st.paused || []).filter(p => p.name.startsWith('target:')).map(p => p.name.slice(7));
  const dispatcher = !st.pump_running ? 'runs with the pump, not here'
    : pausedTargets.length ? 'running; paused for ' + pausedTargets.join(', ') : 'running';
  const kids = [h('h2', {}, 'Pump and dispatcher')];
  const state = pumpPause ? `paused by ${pumpPause.paused_by} since ${fmtTime(pumpPause.paused_at)}` + (pumpPause.reason ? ': ' + pumpPause.reason : '')
    : st.pump_running ? 'running' : 'not running here';
  kids.push(h('dl', { class: 'kv' },
    h('dt', {}, 'Pump'), h('dd', { id: 'pump-state', class: pumpPause ? 'warn' : st.pump_running ? 'ok' : 'warn' }, state),
    st.pump_state && !pumpPause ? [h('dt', {}, 'Detail'), h('dd', {}, srvText(st.pump_state))] : null,
    h('dt', {}, 'Dispatcher'), h('dd', { id: 'dispatcher-state', class: pausedTargets.length ? 'warn' : null }, dispatcher),
    h('dt', {}, 'Lease holder'), h('dd', { id: 'lease-holder' }, st.lease_holder || 'nobody'),
    ex.job ? [h('dt', {}, 'Job in hand'), h('dd', { id: 'job-in-hand' }, `${ex.job.kind} (job ${ex.job.job_id}) for ${ex.job.running_for}: ${srvText(ex.job.doing)}`)] : null,
    ex.in_hand ? [h('dt', {}, 'Message in hand'), h('dd', { id: 'message-in-hand' }, `${ex.in_hand.msg_id} ${ex.in_hand.tag || ''} for ${ex.in_hand.running_for}: ${srvText(ex.in_hand.doing)}`)] : null,
    ex.shadow && ex.shadow.mode === 'shadow' ? [h('dt', {}, 'Mode'), h('dd', { class: 'warn' }, `shadow: adopting above message ${ex.shadow.after_id}, writing no legacy table`)] : null));
  if (can('operator')) {
    kids.push(h('div', { class: 'actions' }, pumpPause
      ? h('button', { id: 'pump-resume', type: 'button', onclick: () => pumpAction('resume') }, 'Resume the pump')
      : h('button', { id: 'pump-pause', type: 'button', onclick: () => pumpAction('pause') }, 'Pause the pump')));
  }
  fill(el, ...kids);
}

// targetPaused returns the target's pause (who, why, since) from the status, or null.
function targetPaused(st, name) {
  return (st.paused || []).find(p => p.name === 'target:' + name) || null;
}

function renderTargets(el, st) {
  const ts = (st.extra && Array.isArray(st.extra.targets)) ? st.extra.targets : [];
  const cols = [
    { head: 'Target', cell: t => link('/events?state=PENDING&target=' + encodeURIComponent(t.target), t.target) },
    { head: 'State', cell: t => { const p = targetPaused(st, t.target); return p ? h('span', { class: 'warn' }, `paused by ${p.paused_by}` + (p.reason ? ': ' + p.reason : '')) : t.blocked_since ? h('span', { class: 'bad' }, 'blocked') : t.rejecting ? h('span', { class: 'bad', title: 'its latest events all went DEAD; none delivered since' }, 'rejecting') : h('span', { class: 'ok' }, 'delivering'); } },
    { head: 'Pending', class: 'num', cell: t => String(t.pending) },
    { head: 'Dead', class: 'num', cell: t => t.dead ? link('/events?state=DEAD&target=' + encodeURIComponent(t.target), String(t.dead)) : '0' },
    { head: 'Sent', class: 'num', cell: t => String(t.sent) },
    { head: 'Oldest pending', cell: t => t.oldest_pending_at ? fmtAge(t.oldest_pending_age_s) : '' },
    { head: 'Blocked since', cell: t => t.blocked_since ? [timeEl(t.blocked_since), h('div', { class: 'error' }, (t.error_class || '') + ' ' + srvText(t.last_error))] : '' },
  ];
  if (can('operator')) {
    cols.push({ head: 'Actions', cell: t => h('span', { class: 'actions' },
      targetPaused(st, t.target)
        ? h('button', { type: 'button', id: 'target-resume-' + t.target, onclick: () => targetAction(t.target, 'resume') }, 'Resume')
        : h('button', { type: 'button', id: 'target-pause-' + t.target, onclick: () => targetAction(t.target, 'pause') }, 'Pause'),
      t.dead ? h('button', { type: 'button', id: 'target-replay-' + t.target, onclick: () => replayDeadEvents(t.target, t.dead) }, 'Replay dead') : null) });
  }
  fill(el, h('h2', {}, 'Delivery targets'), table(cols, ts, { id: 'targets-table', rowId: t => t.target, empty: 'No targets reported.' }));
}

// renderRecent shows the recent problems, kept across restarts: messages parked, dead or
// applied with warnings, and the operators' actions.
function renderRecent(el, st) {
  const rec = (st.extra && Array.isArray(st.extra.recent)) ? st.extra.recent : [];
  fill(el, h('h2', {}, 'Recent problems and operator actions'), table([
    { head: 'At', cell: r => timeEl(r.at) },
    { head: 'What', cell: r => r.kind === 'action' ? `${r.actor || '?'} on ${r.subject || ''}` : [msgLink(r.msg_id), ' ', r.type_tag || ''] },
    { head: 'State', cell: r => r.kind === 'action' ? 'action' : [stateSpan(r.state), r.error_class ? ' ' + r.error_class : ''] },
    { head: 'Note', cell: r => srvText(r.note) },
  ], rec, { id: 'recent-table', rowId: r => r.id, empty: 'No problem recorded.' }));
}

function renderThroughput(el, tp) {
  const per = tp.per_minute || [];
  const W = 600, H = 80, bw = W / Math.max(per.length, 1);
  const top = Math.max(1, ...per);
  const bars = per.map((n, i) => {
    const bh = n ? Math.max(2, Math.round(n / top * (H - 4))) : 0;
    return svg('rect', { x: (i * bw).toFixed(1), y: H - bh, width: Math.max(1, bw - 1).toFixed(1), height: bh }, svg('title', {}, `${60 - i} min ago: ${n}`));
  });
  const chart = svg('svg', { class: 'spark', id: 'throughput-chart', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', 'aria-label': 'messages finished per minute, last hour' },
    svg('line', { x1: 0, y1: H - 0.5, x2: W, y2: H - 0.5, stroke: '#9aa5b1' }), bars);
  fill(el, h('h2', {}, 'Throughput, last hour'), chart,
    h('p', { class: 'muted', id: 'throughput-total' },
      `${tp.total} message(s) finished in the last hour; busiest minute ${top === 1 && !per.some(Boolean) ? 0 : top}.`));
}

// ---- actions ------------------------------------------------------------------------------------

function parkButton(id, elid) {
  return h('button', { type: 'button', id: elid || 'park', class: 'danger', onclick: () => parkMessage(id) }, 'Park…');
}

async function parkMessage(id) {
  const done = await confirmAction({
    title: `Park message ${id}`,
    body: ['It goes DEAD with class PARKED and the queue moves on behind it. It stays replayable.'],
    reason: true, confirmText: 'Park',
    act: reason => api('POST', API.park(id), { reason }),
  });
  if (done) { flash(`Message ${id} parked.`); route(); }
}

async function pumpAction(verb) {
  const pause = verb === 'pause';
  const done = await confirmAction({
    title: pause ? 'Pause the pump' : 'Resume the pump',
    body: [pause ? 'No message is processed until it is resumed; the inbox keeps accepting.' : 'Processing goes on from the head of the queue.'],
    reason: pause, confirmText: pause ? 'Pause' : 'Resume',
    act: reason => api('POST', API.pump(verb), pause ? { reason } : {}),
  });
  if (done) { flash(pause ? 'Pump paused.' : 'Pump resumed.'); route(); }
}

async function targetAction(name, verb) {
  const pause = verb === 'pause';
  const done = await confirmAction({
    title: `${pause ? 'Pause' : 'Resume'} target ${name}`,
    body: [pause ? `Events for ${name} wait (PENDING) until it is resumed; other targets go on.` : `${name} delivers its waiting events in order.`],
    reason: pause, confirmText: pause ? 'Pause' : 'Resume',
    act: reason => api('POST', API.target(name, verb), pause ? { reason } : {}),
  });
  if (done) { flash(`Target ${name} ${pause ? 'paused' : 'resumed'}.`); route(); }
}

async function replayDeadEvents(target, count, ids) {
  const req = ids && ids.length ? { target, ids } : { target };
  let preview;
  try {
    preview = await api('POST', API.eventsReplay, Object.assign({ dry_run: true }, req));
  } catch (e) {
    preview = { error: describe(e) };
  }
  const body = [preview.error
    ? h('p', { class: 'warn' }, 'No preview: ' + preview.error)
    : h('p', { id: 'events-replay-preview' }, `${preview.moved} DEAD event(s) of ${target} would go back to PENDING` + (preview.skipped ? `, ${preview.skipped} would be left as they are` : '') + '.')];
  body.push(h('p', {}, preview.note || 'Replayed events are delivered after the newer events of this target that were delivered meanwhile: receivers order and deduplicate by event_id.'));
  const done = await confirmAction({
    title: `Replay dead events of ${target}`, body, confirmText: 'Replay',
    act: () => api('POST', API.eventsReplay, req),
  });
  if (done) { flash(`Replayed: ${done.moved} moved, ${done.skipped} skipped.`); route(); }
}

// replayMessages previews (dry_run) what would move, then replays on confirmation.
async function replayMessages(req) {
  let preview;
  try {
    preview = await api('POST', API.replay, Object.assign({ dry_run: true }, req));
  } catch (e) {
    preview = { error: describe(e) };
  }
  const body = [];
  if (preview.error) {
    body.push(h('p', { class: 'warn' }, 'No preview: ' + preview.error));
  } else {
    const ids = preview.ids || [];
    body.push(h('p', { id: 'replay-preview' }, `${preview.moved ?? ids.length} message(s) would move back to PENDING` +
      (preview.skipped ? `, ${preview.skipped} would be left as they are` : '') + '.'));
    // What would move, as the CLI's dry run prints it: the first items the API describes.
    const items = preview.items || [];
    if (items.length) {
      body.push(table([
        { head: 'id', cell: it => msgLink(it.id) },
        { head: 'tag', cell: it => it.tag || '-' },
        { head: 'class', cell: it => it.error_class || '-' },
        { head: 'age', cell: it => fmtAge(it.age_seconds) },
      ], items, { id: 'replay-items', rowId: it => it.id }));
      const more = (preview.moved ?? ids.length) - items.length;
      if (more > 0) body.push(h('p', { class: 'muted', id: 'replay-more' }, `… and ${more} more (the table shows the first ${items.length})`));
    }
  }
  body.push(h('p', { class: 'muted' }, 'MALFORMED messages are never replayed.'));
  const what = req.ids ? `message(s) ${req.ids.join(', ')}` : `class(es) ${req.classes.join(', ')}`;
  const done = await confirmAction({
    title: 'Replay ' + what, body, confirmText: 'Replay',
    act: () => api('POST', API.replay, req),
  });
  if (done) { flash(`Replayed: ${done.moved} moved, ${done.skipped} skipped.`); route(); }
}

// ---- messages ---------------------------------------------------------------------------------

const MSG_FILTERS = ['state', 'class', 'tag', 'flid', 'from', 'to', 'q'];

views.messages = async ({ params, gen, view }) => {
  const f = {};
  for (const k of MSG_FILTERS) f[k] = params.get(k) || '';
  const inp = (name, label, attrs) => h('label', {}, label, h('input', Object.assign({ name, id: 'filter-' + name, value: f[name] }, attrs || {})));
  const sel = (name, label, opts) => h('label', {}, label, h('select', { name, id: 'filter-' + name },
    h('option', { value: '' }, 'any'), opts.map(o => h('option', { value: o, selected: f[name] === o }, o))));
  const form = h('form', { class: 'filters', id: 'message-filters' },
    sel('state', 'State', STATES), sel('class', 'Class', CLASSES),
    inp('tag', 'Type tag', { placeholder: 'FLOP-CHOT', size: 12 }),
    inp('flid', 'Flight (FLID)', { inputmode: 'numeric', size: 10 }),
    inp('from', 'Received from (airport time)', { placeholder: 'YYYY-MM-DD HH:MM', size: 16, autocomplete: 'off' }),
    inp('to', 'to', { placeholder: 'YYYY-MM-DD HH:MM', size: 16, autocomplete: 'off' }),
    inp('q', 'Text', { placeholder: 'identity, error, note, body', size: 22,
      title: 'A substring of the identity, the last error or the note of any message, or of the body of one of the newest 50,000 messages' }),
    h('button', { type: 'submit', class: 'primary', id: 'filter-apply' }, 'Filter'),
    h('a', { href: '#/messages' }, 'clear'));
  const timeErr = h('p', { class: 'error', id: 'filter-time-error', hidden: true });
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    const q = {};
    for (const k of MSG_FILTERS) q[k] = form.elements[k].value.trim();
    for (const k of ['from', 'to']) {
      if (q[k] && !airportInstant(q[k])) {
        timeErr.textContent = `"${q[k]}" is not a time written YYYY-MM-DD HH:MM (airport time, ${zone()})`;
        timeErr.hidden = false;
        return;
      }
    }
    go('/messages', q);
  });
  const list = h('div', { id: 'message-list' }, h('p', { class: 'muted' }, 'Loading…'));
  fill(view, h('h1', {}, 'Messages'), form, timeErr, list);

  // from and to are airport time as typed (the address keeps them so); the API takes instants.
  const q = new URLSearchParams();
  for (const k of MSG_FILTERS) {
    if (!f[k]) continue;
    if (k === 'from' || k === 'to') {
      const at = airportInstant(f[k]);
      if (!at) throw new Error(`${k}: "${f[k]}" is not a time written YYYY-MM-DD HH:MM (airport time, ${zone()})`);
      q.set(k, at.toISOString());
    } else q.set(k, f[k]);
  }
  q.set('limit', '100');
  for (const k of ['after', 'before']) if (params.get(k)) q.set(k, params.get(k));
  const res = await api('GET', API.messages + '?' + q.toString());
  if (!alive(gen)) return;
  // Newest first; the first page follows the stream of arrivals (followList).
  const ms = res.messages || [];
  const selected = new Set();
  const cols = [
    { head: 'Id', cell: m => msgLink(m.id) },
    { head: 'Received', cell: m => timeEl(m.received_at) },
    { head: 'State', cell: m => [stateSpan(m.state), m.error_class ? ' ' + m.error_class : ''] },
    { head: 'Type', cell: m => m.type_tag || '' },
    { head: 'Identity', cell: m => m.identity || '' },
    { head: 'Tries', class: 'num', cell: m => String(m.attempts) },
    { head: 'Note / last error', cell: m => [srvText(m.note), m.last_error ? h('div', { class: 'error' }, srvText(m.last_error)) : null, (m.warnings || []).length ? h('div', { class: 'warn' }, `${m.warnings.length} warning(s)`) : null] },
  ];
  const replayable = m => (m.state === 'DEAD' || m.state === 'FAILED') && m.error_class !== 'MALFORMED';
  if (can('operator')) {
    cols.unshift({ head: '', cell: m => replayable(m) ? h('input', { type: 'checkbox', 'aria-label': 'select ' + m.id, checked: selected.has(m.id), onchange: ev => ev.target.checked ? selected.add(m.id) : selected.delete(m.id) }) : '' });
  }
  const firstPage = !params.get('after') && !params.get('before');
  // Arrivals are matched here against the filters the stream can tell (state, class, tag);
  // with a flight, text or time filter the list does not follow.
  const followable = firstPage && !f.flid && !f.q && !f.from && !f.to;
  const matches = m => (!f.state || m.state === f.state) && (!f.class || m.error_class === f.class) &&
    (!f.tag || (f.tag.includes('-') ? m.type_tag === f.tag.toUpperCase() : String(m.type_tag || '').startsWith(f.tag.toUpperCase() + '-')));
  const lt = liveTable(cols, ms, { id: 'messages-table', rowId: m => m.id, empty: 'No message matches.' });
  const head = [];
  if (followable) {
    head.push(followList({ gen, url: API.messages + '/stream?after=' + listSince(ms, m => m.id, res), list: lt, matches, what: 'message', name: 'messages' }));
  } else if (firstPage) {
    head.push(h('p', { class: 'muted', id: 'live-state' }, 'Not following new messages with a flight, text or time filter: reload to see new ones.'));
  }
  const kids = [head, lt.el];
  if (f.q) {
    kids.push(h('p', { class: 'muted', id: 'text-hint' }, 'Text is looked for in the identity, last error and note of every message, and in the body of the newest 50,000 messages only.'));
  }
  if (f.flid) {
    // flid finds every decoded message that names the flight (MSG_FLIGHT), whatever its
    // outcome: failed and parked (ORPHAN) ones too.
    kids.push(h('p', { class: 'muted', id: 'flid-hint' }, 'These are the messages that name flight ', f.flid,
      ', whatever their outcome (applied, skipped, failed, parked). A message that could not be decoded names no flight: ',
      link('/messages?state=DEAD&q=' + encodeURIComponent(f.flid), 'DEAD'), ' or ',
      link('/messages?state=FAILED&q=' + encodeURIComponent(f.flid), 'FAILED'), ' messages whose error names ', f.flid, '.'));
  }
  if (can('operator') && ms.some(replayable)) {
    kids.unshift(h('div', { class: 'actions' }, h('button', { type: 'button', id: 'replay-selected', onclick: () => {
      if (selected.size === 0) { flash('Select the messages to replay first.', true); return; }
      replayMessages({ ids: [...selected] });
    } }, 'Replay selected…')));
  }
  kids.push(pageLinks('/messages', params, res, firstPage));
  fill(list, ...kids);
};

// pageLinks are the links to the newer and older pages of a newest-first listing (the
// answer's prev and next cursors, "after=…" and "before=…").
function pageLinks(path, params, res, firstPage) {
  const to = (frag, id, text) => {
    const p = Object.fromEntries(params);
    delete p.after; delete p.before;
    const [k, v] = String(frag).split('=');
    p[k] = v;
    return h('a', { href: '#' + path + '?' + new URLSearchParams(p).toString(), id }, text);
  };
  return h('p', { class: 'pages' },
    !firstPage && res.prev ? [to(res.prev, 'prev-page', '← Newer'), ' '] : null,
    !firstPage ? [h('a', { href: '#' + path + '?' + new URLSearchParams(Object.fromEntries([...params].filter(([k]) => k !== 'after' && k !== 'before'))).toString(), id: 'newest-page' }, 'Newest'), ' '] : null,
    res.next ? to(res.next, 'next-page', 'Older →') : null);
}

// LIST_WINDOW is how many rows a live list holds: arrivals go on top and the oldest rows
// beyond it leave (the older pages still show them). A list that kept every row and redrew
// itself on each arrival took a tab from 650 MB to 2.6 GB in a 40-flight burst.
const LIST_WINDOW = 500;
// LIST_FLUSH_MS gathers the arrivals and changes of a burst into one change of the page.
const LIST_FLUSH_MS = 100;

// liveTable is a newest-first table that takes arrivals and changes without being redrawn:
// arrivals are inserted on top, the rows beyond LIST_WINDOW removed from the bottom, a
// changed row replaced in place. cols are as table()'s; opts.rowId names a row (the list's
// key: numbers growing with time), opts.id, opts.rowClass and opts.empty as table()'s.
function liveTable(cols, rows, opts) {
  const key = r => String(opts.rowId(r));
  const body = h('tbody', {});
  const tbl = h('table', { id: opts.id }, h('thead', {}, h('tr', {}, cols.map(c => h('th', { class: c.class }, c.head)))), body);
  const empty = h('p', { class: 'muted' }, opts.empty || 'Nothing here.');
  const el = h('div', { class: 'live-table' }, empty, tbl);
  const shown = new Map(); // key → tr
  const rowEl = r => h('tr', { 'data-id': key(r), class: opts.rowClass ? opts.rowClass(r) : null },
    cols.map(c => h('td', { class: c.class }, c.cell(r))));
  const settle = () => {
    while (shown.size > LIST_WINDOW) {
      const last = body.lastElementChild;
      shown.delete(last.dataset.id);
      last.remove();
    }
    empty.hidden = shown.size > 0;
    tbl.hidden = shown.size === 0;
  };
  const lt = {
    el,
    key,
    size: () => shown.size,
    has: r => shown.has(key(r)),
    // oldest is the key of the bottom row (a number), or -Infinity when the window has room.
    oldest: () => shown.size < LIST_WINDOW ? -Infinity : Number(body.lastElementChild.dataset.id),
    // replace shows r's new value in place; false when r is not shown.
    replace(r) {
      const tr = shown.get(key(r));
      if (!tr) return false;
      const next = rowEl(r);
      tr.replaceWith(next);
      shown.set(key(r), next);
      return true;
    },
    // prepend puts rs (newest first) on top, in one change of the page.
    prepend(rs) {
      const frag = document.createDocumentFragment();
      for (const r of rs.slice(0, LIST_WINDOW)) {
        if (lt.replace(r)) continue;
        const tr = rowEl(r);
        shown.set(key(r), tr);
        frag.append(tr);
      }
      body.prepend(frag);
      settle();
    },
    // reset shows rs (newest first) instead of every row (a page read again).
    reset(rs) {
      body.replaceChildren();
      shown.clear();
      lt.prepend(rs);
    },
  };
  lt.prepend(rows || []);
  return lt;
}

// followList makes the first page of a newest-first list (a liveTable) follow its stream
// (url, the list's filters and after=listSince): arrivals wait behind an "N new" bar (a click
// shows them) so that the rows do not move under the reader, or, with Tail on, go on top as
// they come; an update replaces its row, or arrives when the list lacks it and it is newer
// than the list's oldest row (it came to match the filter). matches (optional) says whether
// the list shows a row. Arrivals and changes are applied every LIST_FLUSH_MS, a burst at
// once; the rows waiting behind the bar are bounded by LIST_WINDOW as the list is. Tail is
// per list (name), off until turned on, and remembered for that list in this tab only.
// It returns what goes above the list: the tail switch, the connection's state, the bar.
function followList({ gen, url, list, matches, what, name }) {
  const fresh = new Map(); // arrivals not shown yet, oldest first, at most LIST_WINDOW
  let freshCount = 0; // arrivals behind the bar, those beyond the window included
  const tailKey = 'msgx.tail.' + name;
  const newBar = h('button', { type: 'button', id: 'new-bar', class: 'new-bar', hidden: true, onclick: () => showFresh() });
  const tail = h('input', { type: 'checkbox', id: 'tail-toggle', checked: sessionGet(tailKey) === '1' });
  const liveNote = h('span', { class: 'muted', id: 'live-state' });
  let arrivals = [], updates = new Map(), timer = 0, dropped = 0;
  const newestFirst = rows => rows.reverse();
  const showFresh = () => {
    list.prepend(newestFirst([...fresh.values()]));
    fresh.clear();
    freshCount = 0;
    newBar.hidden = true;
  };
  const wanted = r => !matches || matches(r);
  const flush = () => {
    timer = 0;
    if (!alive(gen)) return;
    const came = arrivals;
    const changed = updates;
    arrivals = [];
    updates = new Map();
    const add = [];
    for (const came1 of came) {
      const k = list.key(came1);
      // A change read in the same interval is the newer value of the arrival.
      const r = changed.get(k) || came1;
      changed.delete(k);
      if (!wanted(r) || fresh.has(k)) continue;
      if (list.replace(r)) continue;
      add.push(r);
    }
    for (const r of changed.values()) {
      const k = list.key(r);
      if (list.replace(r)) continue;
      if (fresh.has(k)) { fresh.set(k, r); continue; }
      // Now in a state the filter selects, and within the window: it arrives.
      if (wanted(r) && Number(k) > list.oldest()) add.push(r);
    }
    const skipped = dropped;
    dropped = 0;
    if (!add.length) return;
    add.sort((a, b) => Number(list.key(a)) - Number(list.key(b)));
    if (tail.checked) {
      list.prepend(newestFirst(add));
      return;
    }
    for (const r of add) fresh.set(list.key(r), r);
    for (const k of fresh.keys()) {
      if (fresh.size <= LIST_WINDOW) break;
      fresh.delete(k);
    }
    freshCount += add.length + skipped;
    newBar.textContent = `${freshCount} new — show`;
    newBar.hidden = false;
  };
  const later = () => { if (!timer) timer = setTimeout(flush, LIST_FLUSH_MS); };
  const arrive = r => {
    if (!alive(gen)) return;
    arrivals.push(r);
    if (arrivals.length > 2 * LIST_WINDOW) { // a throttled (hidden) tab: keep what the window holds
      dropped += arrivals.length - LIST_WINDOW;
      arrivals = arrivals.slice(-LIST_WINDOW);
    }
    later();
  };
  const update = r => {
    if (!alive(gen)) return;
    updates.set(list.key(r), r);
    later();
  };
  tail.addEventListener('change', () => {
    sessionSet(tailKey, tail.checked ? '1' : '0');
    if (tail.checked && fresh.size) showFresh();
  });
  openLive(url, arrive, update, state => {
    if (alive(gen)) liveNote.textContent = state;
  });
  return [h('div', { class: 'actions live' }, h('label', { title: `Show each new ${what} on top as it arrives (this list only)` }, tail, ' Tail'), ' ', liveNote), newBar];
}

// sessionGet and sessionSet keep a setting for this tab (sessionStorage), or not at all
// where the browser refuses storage.
function sessionGet(k) { try { return sessionStorage.getItem(k); } catch (e) { return null; } }
function sessionSet(k, v) { try { sessionStorage.setItem(k, v); } catch (e) { /* not kept */ } }
// Tail was once one setting for every list, kept for good: forget it.
try { localStorage.removeItem('msgx.tail'); } catch (e) { /* no storage */ }

// listSince is the stream cursor of a first page: its newest row, or, when it is empty, the
// answer's prev cursor ("after=N").
function listSince(rows, key, res) {
  return encodeURIComponent(rows.length ? key(rows[0]) : Number(String(res.prev || 'after=0').split('=')[1]) || 0);
}

// liveSource is the open event stream of the view shown (route closes it on leaving).
let liveSource = null;

// openLive follows a list's event stream: onMessage for each arrival, onUpdate for each
// change of a row, onState with a word on the connection (EventSource reconnects by itself,
// resuming after the last arrival it got).
function openLive(url, onMessage, onUpdate, onState) {
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

// prettyXML indents XML text for reading; anything it cannot follow is left as it is.
function prettyXML(src) {
  const tokens = src.replace(/>\s+</g, '><').split(/(<[^>]*>)/).filter(t => t.trim() !== '');
  const out = [];
  let depth = 0;
  const pad = () => '  '.repeat(depth);
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    const isTag = t.startsWith('<');
    if (isTag && t.startsWith('</')) {
      depth = Math.max(0, depth - 1);
      out.push(pad() + t);
    } else if (isTag && !/^<[?!]/.test(t) && !t.endsWith('/>')) {
      const next = tokens[i + 1] || '', after = tokens[i + 2] || '';
      if (!next.startsWith('<') && after.startsWith('</')) { out.push(pad() + t + next.trim() + after); i += 2; }
      else if (next.startsWith('</')) { out.push(pad() + t + next); i += 1; }
      else { out.push(pad() + t); depth++; }
    } else {
      out.push(pad() + t.trim());
    }
  }
  return out.join('\n');
}

views.message = async ({ arg, gen, view }) => {
  const id = arg;
  const m = await api('GET', API.message(id));
  if (!alive(gen)) return;
  const actions = h('div', { class: 'actions' });
  if (can('operator')) {
    if (m.state === 'PENDING' || m.state === 'FAILED') actions.append(parkButton(m.id));
    if ((m.state === 'DEAD' || m.state === 'FAILED') && m.error_class !== 'MALFORMED') {
      actions.append(h('button', { type: 'button', id: 'replay', onclick: () => replayMessages({ ids: [m.id] }) }, 'Replay…'));
    }
  }
  const rawBox = h('section', { class: 'card', id: 'raw' }, h('h2', {}, 'Raw body'), h('p', { class: 'muted' }, 'Loading…'));
  const decodedBox = h('section', { class: 'card', id: 'decoded' }, h('h2', {}, 'Decoded'), h('p', { class: 'muted' }, 'Loading…'));
  const historyBox = h('section', { class: 'card', id: 'history' }, h('h2', {}, 'History'), h('p', { class: 'muted' }, 'Loading…'));
  const eventsBox = h('section', { class: 'card', id: 'message-events' }, h('h2', {}, 'Events'), h('p', { class: 'muted' }, 'Loading…'));
  const extra = [];
  if (/-RESP$/.test(m.type_tag || '')) {
    // A RESP answers a data request of msgx's: find the request whose answer it is.
    const box = h('section', { class: 'card', id: 'request' }, h('h2', {}, 'Request it answered'), h('p', { class: 'muted' }, 'Looking…'));
    extra.push(box);
    api('GET', API.requests + '?limit=1000').then(res => {
      if (!alive(gen)) return;
      const req = (res.requests || []).find(r => String(r.answer_msg_id) === String(m.id));
      fill(box, h('h2', {}, 'Request it answered'), req ? anyValue(req) : h('p', { class: 'muted' }, 'None of the last 1,000 requests names this message as its answer (an unrequested RESP, or the AODB sent it on its own).'));
    }).catch(e => alive(gen) && fill(box, h('h2', {}, 'Request it answered'), h('p', { class: 'muted' }, describe(e))));
  }
  fill(view, 
    h('h1', {}, `Message ${m.id} `, stateSpan(m.state)),
    actions,
    h('section', { class: 'card', id: 'summary' }, h('dl', { class: 'kv' },
      h('dt', {}, 'State'), h('dd', { id: 'msg-state' }, stateSpan(m.state), m.error_class ? ' ' + m.error_class : ''),
      h('dt', {}, 'Type tag'), h('dd', {}, m.type_tag || ''),
      h('dt', {}, 'Identity'), h('dd', {}, m.identity || ''),
      h('dt', {}, 'Attempts'), h('dd', {}, String(m.attempts)),
      h('dt', {}, 'Received'), h('dd', {}, timeEl(m.received_at)),
      h('dt', {}, 'Processed'), h('dd', {}, timeEl(m.processed_at)),
      m.next_attempt_at ? [h('dt', {}, 'Next attempt'), h('dd', {}, timeEl(m.next_attempt_at))] : null,
      m.first_failed_at ? [h('dt', {}, 'First failed'), h('dd', {}, timeEl(m.first_failed_at))] : null,
      h('dt', {}, 'Note'), h('dd', { id: 'msg-note' }, srvText(m.note)),
      h('dt', {}, 'Last error'), h('dd', { class: 'error', id: 'msg-error' }, srvText(m.last_error)),
      h('dt', {}, 'Warnings'), h('dd', { id: 'msg-warnings' }, (m.warnings || []).length ? h('ul', {}, m.warnings.map(w => h('li', { class: 'warn' }, srvText(w)))) : 'none'),
      m.flid || m.flids ? [h('dt', {}, 'Flights'), h('dd', {}, [].concat(m.flids || m.flid).map((f, i) => [i ? ', ' : '', flightLink(f)]))] : null)),
    historyBox, rawBox, decodedBox, eventsBox, extra);

  // Each part loads on its own: one that the server lacks says so and the rest still show.
  api('GET', API.raw(id), undefined, { text: true }).then(raw => alive(gen) && renderRaw(rawBox, raw))
    .catch(e => alive(gen) && fill(rawBox, h('h2', {}, 'Raw body'), h('p', { class: 'muted' }, describe(e))));
  api('GET', API.decoded(id)).then(d => {
    if (!alive(gen)) return;
    fill(decodedBox, h('h2', {}, 'Decoded'),
      d.error ? h('p', { class: 'error', id: 'decode-error' }, `${d.class}: ${d.error}`) : null,
      d.decoded ? [h('p', { class: 'muted' }, 'Times in airport time, ' + zone() + '.'), h('pre', { id: 'decoded-json' }, jsonText(d.decoded))] : null);
  }).catch(e => alive(gen) && fill(decodedBox, h('h2', {}, 'Decoded'), h('p', { class: 'muted' }, describe(e))));
  api('GET', API.history(id)).then(res => alive(gen) && renderHistory(historyBox, res))
    .catch(e => alive(gen) && fill(historyBox, h('h2', {}, 'History'), h('p', { class: 'muted' }, describe(e))));
  api('GET', API.events + '?msg_id=' + encodeURIComponent(id) + '&limit=200').then(res => {
    if (!alive(gen)) return;
    // A server that ignores msg_id would list every event: keep only this message's.
    const evs = (res.events || []).filter(e => String(e.msg_id) === String(id));
    fill(eventsBox, h('h2', {}, 'Events'), eventsTable(evs, false));
  }).catch(e => alive(gen) && fill(eventsBox, h('h2', {}, 'Events'), h('p', { class: 'muted' }, describe(e))));
};

function renderRaw(box, raw) {
  const text = String(raw);
  const shown = text.length > RAW_SHOW_BYTES ? text.slice(0, RAW_SHOW_BYTES) : text;
  const pre = h('pre', { id: 'raw-body' }, prettyXML(shown));
  const asSent = h('button', { type: 'button', id: 'raw-as-sent' }, 'As received');
  const pretty = h('button', { type: 'button', id: 'raw-pretty', class: 'active' }, 'Indented');
  asSent.onclick = () => { pre.textContent = shown; asSent.classList.add('active'); pretty.classList.remove('active'); };
  pretty.onclick = () => { pre.textContent = prettyXML(shown); pretty.classList.add('active'); asSent.classList.remove('active'); };
  fill(box, h('h2', {}, 'Raw body'), h('div', { class: 'actions tabs' }, pretty, asSent),
    text.length > shown.length ? h('p', { class: 'warn' }, `Showing the first ${shown.length} of ${text.length} characters.`) : null, pre);
}

// renderHistory shows a message's attempts and state changes, whatever the list is called.
function renderHistory(box, res) {
  const list = Array.isArray(res) ? res : (res.history || []);
  fill(box, h('h2', {}, 'History'), h('div', { id: 'history-list' }, table([
    { head: 'At', cell: e => timeEl(e.at) },
    { head: 'State', cell: e => [stateSpan(e.state), e.error_class ? ' ' + e.error_class : ''] },
    { head: 'Attempts', class: 'num', cell: e => String(e.attempts ?? '') },
    { head: 'Detail', cell: e => srvText(e.detail) },
    { head: 'By', cell: e => e.actor || h('span', { class: 'muted' }, 'pump') },
  ], list, { empty: 'Nothing recorded yet (messages processed before msgx kept a history have only their state).' })));
}

// ---- events ---------------------------------------------------------------------------------------

function eventsTable(evs, selectable, selected) {
  return table(eventCols(selectable, selected), evs, { id: 'events-table', rowId: e => e.event_id, empty: 'No event.' });
}

// eventCols are the columns of a list of events; selectable adds a box to pick DEAD ones.
function eventCols(selectable, selected) {
  const cols = [
    { head: 'Event', cell: e => String(e.event_id) },
    { head: 'Target', cell: e => e.target },
    { head: 'Kind', cell: e => e.kind },
    { head: 'Flight', cell: e => e.flight_key ? flightLink(e.flight_key) : '' },
    { head: 'Message', cell: e => msgLink(e.msg_id) },
    { head: 'State', cell: e => [stateSpan(e.state), e.error_class ? ' ' + e.error_class : ''] },
    { head: 'Tries', class: 'num', cell: e => String(e.attempts) },
    { head: 'Created', cell: e => timeEl(e.created_at) },
    { head: 'Sent', cell: e => timeEl(e.sent_at) },
    { head: 'Last error', cell: e => e.last_error ? h('span', { class: 'error' }, srvText(e.last_error)) : '' },
    { head: 'Payload', cell: e => e.payload_elided ? h('span', { class: 'muted' }, `${e.payload_bytes} bytes, not listed`)
      : e.payload !== undefined && e.payload !== null ? h('details', {}, h('summary', {}, 'show'), h('pre', {}, jsonText(e.payload))) : '' },
  ];
  if (selectable) {
    cols.unshift({ head: '', cell: e => e.state === 'DEAD' ? h('input', { type: 'checkbox', 'aria-label': 'select event ' + e.event_id, checked: selected.has(e.event_id), onchange: ev => ev.target.checked ? selected.add(e.event_id) : selected.delete(e.event_id) }) : '' });
  }
  return cols;
}

views.events = async ({ params, gen, view }) => {
  const target = params.get('target') || '', state = params.get('state') || '', flid = params.get('flid') || '';
  const st = await api('GET', API.status).catch(() => ({}));
  const names = (st.extra && Array.isArray(st.extra.targets) ? st.extra.targets : []).map(t => t.target);
  const form = h('form', { class: 'filters', id: 'event-filters' },
    h('label', {}, 'Target', h('select', { name: 'target', id: 'filter-target' }, h('option', { value: '' }, 'any'), names.map(n => h('option', { value: n, selected: n === target }, n)))),
    h('label', {}, 'State', h('select', { name: 'state', id: 'filter-event-state' }, h('option', { value: '' }, 'any'), ['PENDING', 'SENT', 'DEAD'].map(s => h('option', { value: s, selected: s === state }, s)))),
    h('label', {}, 'Flight (FLID)', h('input', { name: 'flid', value: flid, size: 10 })),
    h('button', { type: 'submit', class: 'primary' }, 'Filter'));
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    go('/events', { target: form.elements.target.value, state: form.elements.state.value, flid: form.elements.flid.value.trim() });
  });
  const q = new URLSearchParams({ limit: '200' });
  if (target) q.set('target', target);
  if (state) q.set('state', state);
  if (flid) q.set('flid', flid);
  for (const k of ['after', 'before']) if (params.get(k)) q.set(k, params.get(k));
  const res = await api('GET', API.events + '?' + q.toString());
  if (!alive(gen)) return;
  const evs = res.events || [];
  const selected = new Set();
  const actions = h('div', { class: 'actions' });
  if (can('operator') && target && evs.some(e => e.state === 'DEAD')) {
    actions.append(h('button', { type: 'button', id: 'events-replay-selected', onclick: () => {
      if (!selected.size) { flash('Select DEAD events first.', true); return; }
      replayDeadEvents(target, selected.size, [...selected]);
    } }, 'Replay selected…'));
  }
  const lt = liveTable(eventCols(can('operator') && !!target, selected), evs, { id: 'events-table', rowId: e => e.event_id, empty: 'No event.' });
  const tableBox = lt.el;
  const firstPage = !params.get('after') && !params.get('before');
  // The stream filters as the list does (q), a state too: an event that comes to match
  // arrives then.
  q.delete('limit');
  const head = firstPage ? followList({ gen, url: API.events + '/stream?' + q.toString() + '&after=' + listSince(evs, e => e.event_id, res),
    list: lt, what: 'event', name: 'events' }) : [];
  fill(view, h('h1', {}, 'Events', target ? ' of ' + target : ''), form, actions, head, tableBox, pageLinks('/events', params, res, firstPage));
};

// ---- dead letters -----------------------------------------------------------------------------

// ackDead asks for a note and acknowledges dead letters of kind ('message' or 'event'):
// kept for audit, no longer counted as waiting for attention.
async function ackDead(kind, ids, what) {
  const done = await confirmAction({
    title: 'Acknowledge ' + what,
    body: ['An acknowledged dead letter is kept for audit but no longer counted as waiting for attention. Replay still works.',
      kind === 'event' ? 'RETENTION deletes acknowledged dead events after retention.dead-letters.' : ''],
    reason: true, confirmText: 'Acknowledge',
    act: note => api('POST', API.deadAck, { kind, ids, note }),
  });
  if (done) { flash(`${done.acked.length} acknowledged` + (done.already.length ? `, ${done.already.length} already were` : '') + '.'); route(); }
}

views.dead = async ({ gen, view }) => {
  const [msgs, st, dead] = await Promise.all([
    api('GET', API.messages + '?state=DEAD&limit=200'),
    api('GET', API.status).catch(e => ({ failed: e })),
    api('GET', API.dead + '?kind=message&limit=1000').catch(() => ({ acks: [] })),
  ]);
  if (!alive(gen)) return;
  const acked = {};
  for (const a of dead.acks || []) if (a.state === 'DEAD') acked[a.id] = a;
  const ms = msgs.messages || [];
  const byClass = {};
  for (const m of ms) byClass[m.error_class || '?'] = (byClass[m.error_class || '?'] || 0) + 1;
  const kids = [h('h1', {}, 'Dead letters'), h('h2', {}, 'Messages')];
  if (can('operator')) {
    const replayable = CLASSES.filter(c => c !== 'MALFORMED');
    const first = replayable.find(c => byClass[c]) || 'PARKED';
    const classSel = h('select', { id: 'replay-class' }, replayable.map(c => h('option', { value: c, selected: c === first }, c + (byClass[c] ? ` (${byClass[c]})` : ''))));
    kids.push(h('div', { class: 'actions' }, h('label', {}, 'Replay class ', classSel),
      h('button', { type: 'button', id: 'replay-class-go', onclick: () => replayMessages({ classes: [classSel.value] }) }, 'Preview and replay…')));
  }
  const dl = liveTable([
    { head: 'Id', cell: m => msgLink(m.id) },
    { head: 'Received', cell: m => timeEl(m.received_at) },
    { head: 'Class', cell: m => m.error_class || '' },
    { head: 'Type', cell: m => m.type_tag || '' },
    { head: 'Last error / note', cell: m => [m.last_error ? h('span', { class: 'error' }, srvText(m.last_error)) : '', m.note ? h('div', {}, srvText(m.note)) : null] },
    { head: 'Acknowledged', cell: m => acked[m.id]
      ? h('span', { class: 'muted', id: 'acked-message-' + m.id }, `by ${acked[m.id].acked_by} ${fmtTime(acked[m.id].acked_at)}` + (acked[m.id].note ? ': ' + acked[m.id].note : ''))
      : can('operator') ? h('button', { type: 'button', id: 'ack-message-' + m.id, onclick: () => ackDead('message', [m.id], 'message ' + m.id) }, 'Acknowledge…') : '' },
  ], ms, { id: 'dead-messages', rowId: m => m.id, empty: 'No DEAD message.' });
  // The messages that go DEAD from now on (the stream starts at the newest recent problem).
  kids.push(followList({ gen, url: API.dead + '/stream', list: dl, what: 'dead letter', name: 'dead' }), dl.el);
  if (msgs.next) kids.push(h('p', {}, link('/messages?state=DEAD&' + msgs.next, 'More…')));
  if (st.failed) {
    kids.push(h('h2', {}, 'Events'), h('p', { class: 'banner', id: 'dead-events-error', role: 'alert' },
      'Dead events unknown: ', failedRoute(API.status, st.failed)));
    fill(view, ...kids);
    return;
  }
  const ts = (st.extra && Array.isArray(st.extra.targets) ? st.extra.targets : []).filter(t => t.dead > 0);
  kids.push(h('h2', {}, 'Events'), table([
    { head: 'Target', cell: t => link('/events?state=DEAD&target=' + encodeURIComponent(t.target), t.target) },
    { head: 'Dead', class: 'num', cell: t => String(t.dead) },
    { head: '', cell: t => can('operator') ? [h('button', { type: 'button', onclick: () => replayDeadEvents(t.target, t.dead) }, 'Replay all…'), ' ',
      h('button', { type: 'button', id: 'ack-events-' + t.target, onclick: async () => {
        const evs = await api('GET', API.events + '?state=DEAD&limit=1000&target=' + encodeURIComponent(t.target));
        const ids = (evs.events || []).map(e => e.event_id);
        if (ids.length) ackDead('event', ids, `${ids.length} dead event(s) of ${t.target}`);
      } }, 'Acknowledge all…')] : '' },
  ], ts, { empty: 'No DEAD event.' }));
  fill(view, ...kids);
};

// ---- flights --------------------------------------------------------------------------------------

// The board shows airport time (sis.timezone, which the flights answer names), never the
// browser's: a screen in any zone shows the times the airport's staff and passengers see.
const BOARD_REFRESH_MS = 5000;
const BOARD_CHANGED_MS = 60000;

// zoneParts returns the date (YYYY-MM-DD) and time (HH:MM, HH:MM:SS) of s in zone tz, or null.
function zoneParts(s, tz) {
  const d = new Date(s);
  if (!s || isNaN(d)) return null;
  const f = zoneFields(d, tz);
  if (!f) return null;
  const p = n => String(n).padStart(2, '0');
  return { day: `${f.y}-${p(f.mo)}-${p(f.d)}`, hm: `${p(f.h)}:${p(f.mi)}`, hms: `${p(f.h)}:${p(f.mi)}:${p(f.s)}` };
}

// boardTime shows s as HH:MM in tz, with its date when that is not the board's day.
function boardTime(s, tz, day, source) {
  if (!s) return '';
  const p = zoneParts(s, tz);
  if (!p) return String(s);
  return h('span', { class: 'time', title: (source ? source + ' ' : '') + p.day + ' ' + p.hm + ' ' + tz },
    p.hm, p.day === day ? null : h('small', { class: 'muted' }, ' ' + p.day.slice(5)));
}

// boardEstimate is the flight's estimated time and which field gave it: ESTT, else for an
// arrival IEST, for a departure EOBT then TOBT (what the AODB sends as FLOPs).
function boardEstimate(r) {
  const keys = r.MVIN === 'A' ? ['ESTT', 'IEST'] : ['ESTT', 'EOBT', 'TOBT', 'IEST'];
  const k = keys.find(k => r[k]);
  return k ? [r[k], k] : [null, ''];
}

// boardActual is the flight's actual time: ACTT, else the chocks on (arrival) or off
// (departure) time of CHOT.
function boardActual(r) {
  if (r.ACTT) return [r.ACTT, 'ACTT'];
  const want = r.MVIN === 'A' ? 'ON' : 'OFF';
  const c = (r.CHOT || []).filter(c => String(c.CHID || '').toUpperCase() === want && c.CHTM).pop();
  return c ? [c.CHTM, 'chocks ' + want] : [null, ''];
}

function boardStatus(r, statuses) {
  if (r.CNCL) return h('span', { class: 'bad' }, 'CNL cancelled');
  if (r.FDIV && r.FDIV.DDES) return h('span', { class: 'warn' }, 'DIV diverted to ' + r.FDIV.DDES);
  const code = r.FTSS || r.EXSC || '';
  if (!code) return '';
  const st = statuses[code] || {};
  return h('span', { class: st.ABNS === 'Y' ? 'warn' : null, title: st.STTD || '' }, code, st.STTD ? ' ' + st.STTD : '');
}

function boardRemarks(r) {
  const out = [r.REMC, r.EXSR];
  if (r.FDIV && r.FDIV.DDES) out.push(`diverted ${r.FDIV.DDIR || 'TO'} ${r.FDIV.DDES}` + (r.FDIV.TEXT ? ': ' + r.FDIV.TEXT : ''));
  for (const d of r.DELY || []) out.push(`delay ${d.CODE}` + (d.DURA ? ` ${d.DURA} min` : ''));
  return out.filter(Boolean).join('; ');
}

const boardList = (xs, k) => (xs || []).map(x => x[k]).filter(Boolean).join(' ');

// boardColumns are the board's columns for the flights of day in zone tz.
function boardColumns(tz, day, statuses) {
  return [
    { head: 'Flight', cell: r => [flightLink(r.FLID), ' ', h('b', {}, r.FLNO || '')] },
    { head: 'A/D', cell: r => r.MVIN || '' },
    { head: 'Scheduled', cell: r => boardTime(r.SODT, tz, day, 'SODT'), class: 'sched' },
    { head: 'Estimated', cell: r => { const [t, k] = boardEstimate(r); return boardTime(t, tz, day, k); }, class: 'est' },
    { head: 'Actual', cell: r => { const [t, k] = boardActual(r); return boardTime(t, tz, day, k); }, class: 'act' },
    { head: 'Terminal', cell: r => r.TRML || '' },
    { head: 'Stand', cell: r => r.STND || boardList(r.PSDT, 'PSST') },
    { head: 'Gate', cell: r => boardList(r.GTDT, 'GATE') },
    { head: 'Belt', cell: r => boardList(r.CLDT, 'BELT') },
    { head: 'Aircraft', cell: r => [r.ACFT || '', ' ', r.RENO || ''] },
    { head: 'Status', cell: r => boardStatus(r, statuses), class: 'status' },
    { head: 'Remarks', cell: r => boardRemarks(r), class: 'remarks' },
  ];
}

// boardFilter keeps the flights the filters ask for: ad (A or D), airline (a carrier code
// or flight number prefix) and terminal.
function boardFilter(fl, f) {
  const al = (f.airline || '').trim().toUpperCase();
  return fl.filter(r => (!f.ad || r.MVIN === f.ad) && (!f.terminal || r.TRML === f.terminal) &&
    (!al || String(r.ALCD || '').toUpperCase() === al || String(r.FLNO || '').toUpperCase().startsWith(al)));
}

async function boardStatuses() {
  try {
    const res = await api('GET', '/api/v1/ref/STTS');
    return Object.fromEntries((res.records || []).map(e => [e.key, e.fields || {}]));
  } catch (e) {
    return {};
  }
}

// boardAt reads the board's time control: a time of day (08:15, seconds optional) or a local
// date and time (2026-12-06T08:15 or with a space), airport time; '' is the live board.
const boardAt = s => /^\d{2}:\d{2}(:\d{2})?$/.test(s) || /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2})?$/.test(s);

views.flights = async ({ params, gen, view }) => {
  const f = { ad: params.get('ad') || '', airline: params.get('airline') || '', terminal: params.get('terminal') || '' };
  // at: the board as it stood then (GET /api/v1/flights?as_of=, rebuilt from the messages);
  // none: the live board, refreshed every BOARD_REFRESH_MS.
  const at = (params.get('at') || '').trim();
  const qp = new URLSearchParams();
  if (params.get('day')) qp.set('day', params.get('day'));
  if (at) qp.set('as_of', at.replace(' ', 'T'));
  const q = qp.toString() ? '?' + qp.toString() : '';
  let first, statuses;
  try {
    [first, statuses] = await Promise.all([api('GET', API.flights + q), boardStatuses()]);
  } catch (e) {
    if (!at) throw e;
    // A time the server cannot rebuild (before the kept history, in the future): say why,
    // with the way back to the live board.
    if (!alive(gen)) return;
    fill(view, h('h1', {}, 'Flights as of ' + at),
      h('p', { class: 'error', id: 'board-asof-error' }, describe(e)),
      h('p', {}, h('a', { href: '#/flights?' + new URLSearchParams(Object.assign({}, Object.fromEntries(params), { at: '' })).toString(), id: 'board-live' }, 'Back to the live board')));
    return;
  }
  if (!alive(gen)) return;
  const day = first.day, tz = first.timezone || 'UTC';
  // The day is written YYYY-MM-DD whatever the browser's locale (a date input shows the
  // locale's format, 12/03/2026 in one browser and 03.12.2026 in the next).
  const input = h('input', { type: 'text', name: 'day', id: 'flights-day', value: day, size: 10, maxlength: 10,
    pattern: '\\d{4}-\\d{2}-\\d{2}', placeholder: 'YYYY-MM-DD', inputmode: 'numeric', autocomplete: 'off', title: 'a day at the airport, YYYY-MM-DD' });
  const dayErr = h('span', { class: 'error', id: 'flights-day-error', hidden: true });
  const dayLink = (n, text, id) => h('a', { href: '#/flights?' + new URLSearchParams(Object.assign({}, Object.fromEntries(params), { day: addDays(day, n) })).toString(), id }, text);
  const dayNav = h('span', { class: 'day-nav' }, dayLink(-1, '◀ ' + addDays(day, -1), 'day-prev'), ' ',
    first.today && first.today !== day ? [h('a', { href: '#/flights?' + new URLSearchParams(Object.assign({}, Object.fromEntries(params), { day: first.today })).toString(), id: 'day-today' }, 'today'), ' '] : null,
    dayLink(1, addDays(day, 1) + ' ▶', 'day-next'));
  const ad = h('select', { name: 'ad', id: 'board-ad' }, [['', 'all'], ['A', 'arrivals'], ['D', 'departures']].map(([v, t]) => h('option', { value: v, selected: f.ad === v || null }, t)));
  const airline = h('input', { name: 'airline', id: 'board-airline', value: f.airline, placeholder: 'CA', size: 6 });
  const terms = [...new Set((first.flights || []).map(r => r.TRML).filter(Boolean))].sort();
  const terminal = h('select', { name: 'terminal', id: 'board-terminal' }, h('option', { value: '' }, 'all'),
    terms.map(t => h('option', { value: t, selected: f.terminal === t || null }, t)));
  const asOf = h('input', { type: 'text', name: 'at', id: 'board-asof', value: at, size: 16, maxlength: 19, placeholder: 'HH:MM (live)', autocomplete: 'off',
    title: 'show the board as it stood at this airport time: HH:MM on the day shown, or YYYY-MM-DDTHH:MM; empty: the live board' });
  const live = at ? h('button', { type: 'button', id: 'board-live' }, 'Live') : null;
  const form = h('form', { class: 'filters', novalidate: true }, h('label', {}, 'Day (airport time, YYYY-MM-DD)', input), h('label', {}, 'Movement', ad),
    h('label', {}, 'Airline', airline), h('label', {}, 'Terminal', terminal), h('label', {}, 'As of (airport time)', asOf),
    h('button', { type: 'submit', class: 'primary', id: 'board-show' }, 'Show'), live, dayNav, dayErr);
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    const d = input.value.trim();
    if (!isoDay(d)) {
      dayErr.textContent = `"${d}" is not a day written YYYY-MM-DD (${day}, say)`;
      dayErr.hidden = false;
      input.focus();
      return;
    }
    const t = asOf.value.trim();
    if (t && !boardAt(t)) {
      dayErr.textContent = `"${t}" is not a time written HH:MM or YYYY-MM-DDTHH:MM (airport time)`;
      dayErr.hidden = false;
      asOf.focus();
      return;
    }
    go('/flights', { day: d, ad: ad.value, airline: airline.value.trim(), terminal: terminal.value, at: t });
  });
  if (live) live.addEventListener('click', () => { asOf.value = ''; form.requestSubmit(); });
  for (const el of [ad, terminal]) el.addEventListener('change', () => form.requestSubmit());
  const title = h('h1', {});
  const updated = h('p', { class: 'muted', id: 'board-updated' });
  const box = h('div', { id: 'board' });
  fill(view, title, form, updated, box);
  // A row is highlighted while its record changed less than a minute ago by the server's
  // knowledge (the age the answer gives, so a screen opened after a change shows it too, and
  // the browser's clock does not matter).
  const render = res => {
    const changed = res.changed || {};
    const rows = boardFilter(res.flights || [], f);
    const then = res.as_of ? zoneParts(res.as_of, tz) : null;
    fill(title, `Flights of ${day} `, then ? h('span', { id: 'board-asof-title' }, `as of ${then.day} ${then.hms} `) : null,
      h('span', { class: 'muted' }, `(${rows.length} of ${res.count ?? 0}) `),
      h('span', { id: 'board-zone', class: 'zone' }, `airport time, ${tz}`));
    fill(box, table(boardColumns(tz, day, statuses), rows, { id: 'flights-table', rowId: r => r.FLID,
      rowClass: r => (changed[r.FLID]?.changed_age_s ?? Infinity) * 1000 < BOARD_CHANGED_MS ? 'changed' : null,
      empty: 'No flight stored for this day' + (then ? ' at that time' : '') + (rows.length < (res.count ?? 0) ? ' matches the filters.' : '.') }));
    if (then) {
      const from = res.history_from ? zoneParts(res.history_from, tz) : null;
      fill(updated, `As it stood at ${then.day} ${then.hms} airport time, rebuilt from ${res.messages ?? 0} applied messages` +
        (from ? ` (history kept from ${from.day} ${from.hms})` : '') + '; rows changed in the minute before are highlighted. Clear the time (Live) to return to the live board.',
        (res.warnings || []).map(w => h('span', { class: 'error board-asof-warning' }, ' Warning: ' + w)));
      updated.classList.remove('error');
      return;
    }
    const now = zoneParts(new Date().toISOString(), tz);
    updated.textContent = `Updated ${now ? now.hm : ''} airport time; refreshes every ${BOARD_REFRESH_MS / 1000} s; rows changed in the last minute are highlighted.`;
    updated.classList.remove('error');
  };
  render(first);
  if (at) return; // a past time does not change: no refresh
  const poll = async () => {
    if (!alive(gen)) return;
    try {
      const res = await api('GET', API.flights + '?day=' + encodeURIComponent(day));
      if (!alive(gen)) return;
      render(res);
    } catch (e) {
      if (!alive(gen)) return;
      updated.textContent = 'Could not refresh: ' + describe(e);
      updated.classList.add('error');
    }
    setTimeout(poll, BOARD_REFRESH_MS);
  };
  setTimeout(poll, BOARD_REFRESH_MS);
};

// ---- a flight's record: labelled rows, times in airport time ----------------------------

// FIELDS labels a flight record's fields (docs/payloads.md), in the order the flight page
// shows them; a field not named here is shown after them under its SIS name.
const FIELDS = [
  ['FLNO', 'Flight number'], ['ALCD', 'Airline'], ['FLID', 'AODB flight id'], ['FFID', 'Flight key'],
  ['MVIN', 'Movement'], ['FLIN', 'Domestic/international'], ['FLTY', 'Flight type'],
  ['SODT', 'Scheduled'], ['ESTT', 'Estimated'], ['ACTT', 'Actual'],
  ['EOBT', 'Estimated off-block'], ['TOBT', 'Target off-block'], ['COBT', 'Calculated off-block'], ['CTOT', 'Calculated take-off'],
  ['IEST', 'Internal estimate'], ['APPT', 'Approved (start-up)'], ['BOTM', 'Boarding open'], ['LACL', 'Last call'],
  ['FINT', 'Finals'], ['EGSR', 'Engine start requested'], ['EGST', 'Engine start'], ['CNCL', 'Cancelled at'],
  ['PEDT', 'Estimated departure, previous station'], ['PADT', 'Actual departure, previous station'],
  ['NEAT', 'Estimated arrival, next station'], ['NAAT', 'Actual arrival, next station'],
  ['FTSS', 'Status'], ['EXSC', 'External status'], ['EXSR', 'External status remark'], ['REMC', 'Remark'],
  ['FDIV', 'Diversion'], ['FRET', 'Return'], ['FLAB', 'Aborted landing'],
  ['ACFT', 'Aircraft type'], ['RENO', 'Registration'], ['TRML', 'Terminal'], ['STND', 'Stand'], ['RUNW', 'Runway'],
  ['MAXP', 'Maximum passengers'], ['PAXC', 'Passengers'], ['LBNO', 'Bags'], ['LBWT', 'Bag weight'],
  ['VIPP', 'VIPs'], ['VIPR', 'VIP ranking'],
  ['TAOP', 'Turnaround operator'], ['TAFL', 'Turnaround flight'], ['TAID', 'Turnaround FLID'],
  ['CSOP', 'Code-share operator'], ['CSFT', 'Code-share flight'], ['MAID', 'Code-share master FLID'], ['CSFL', 'Code-share flights'],
  ['FHAG', 'Ramp handler'], ['PHAG', 'Passenger handler'], ['MHAG', 'Maintenance handler'],
];
const FIELD_LABEL = Object.fromEntries(FIELDS);

// GROUPS are a record's repeated groups: a title and each part's label (docs/payloads.md).
const GROUPS = {
  PSDT: ['Stands', { PSNO: 'No.', PSST: 'Stand', STST: 'From', STET: 'Until', PSTM: 'Push-back', PSID: 'Push indicator', TRTM: 'Tractor in place' }],
  GTDT: ['Gates', { GTNO: 'No.', GATE: 'Gate', PGOT: 'Planned open', PGCT: 'Planned close', GOTM: 'Opened', GCTM: 'Closed', GTYP: 'D/I' }],
  CKDT: ['Check-in counters', { CKNO: 'No.', CHKC: 'Counter', CCLS: 'Class', PCOT: 'Planned open', PCCT: 'Planned close', COTM: 'Opened', CCTM: 'Closed', CTYP: 'D/I' }],
  CLDT: ['Baggage belts', { CLNO: 'No.', BELT: 'Belt', BCLS: 'Class', PCOT: 'Planned open', PCCT: 'Planned close', FBAG: 'First bag', LBAG: 'Last bag', BTYP: 'D/I' }],
  CHDT: ['Chutes', { CHNO: 'No.', CHUT: 'Chute', CCLS: 'Class', PCBT: 'Planned begin', PCET: 'Planned end', CBTM: 'Began', CETM: 'Ended', CTYP: 'D/I' }],
  CHOT: ['Chocks', { CSNO: 'No.', CHTM: 'Time', CHID: 'On/off', CHST: 'Stand' }],
  ABTM: ['Airbridges', { ASNO: 'No.', ABDG: 'Airbridge', ABOP: 'Operation', AOTM: 'Time' }],
  DELY: ['Delays', { CODE: 'Code', STRT: 'From', DURA: 'Minutes', TEXT: 'Comment' }],
  ERUT: ['Route', { RTNO: 'No.', APCD: 'Airport', SCAT: 'Scheduled arrival', SCDT: 'Scheduled departure', SADC: 'Arrival day change', SDDC: 'Departure day change' }],
  SRVT: ['Services', { SRTC: 'Service', SRQT: 'Quantity', SRST: 'Start', SRET: 'End', SRPR: 'Provider', SANR: 'Abnormal reason', SARR: 'Abnormal remark' }],
  VIPF: ['VIPs', { VPCD: 'VIP', VFES: 'Entourage', VIPT: 'Services' }],
  PORT: ['Port', { POID: 'Open/close', POTM: 'Time' }],
};

// fieldValue shows one value of a record (or of a change) for reading: a time in airport
// time, a group as a table with labelled columns, a code with its meaning.
function fieldValue(field, v) {
  if (v === null || v === undefined || v === '') return h('span', { class: 'muted' }, '—');
  if (typeof v === 'string' && RFC3339.test(v)) return timeEl(v);
  if (field === 'MVIN') return v === 'A' ? 'A (arrival)' : v === 'D' ? 'D (departure)' : String(v);
  if (field === 'FDIV' && typeof v === 'object') return [v.DDIR || 'TO', ' ', v.DDES || '', v.TEXT ? ': ' + v.TEXT : ''];
  if (field === 'FRET' && typeof v === 'object') return [v.REID === 'A' ? 'air return' : v.REID === 'G' ? 'ground return' : v.REID || '', v.TEXT ? ': ' + v.TEXT : ''];
  if (field === 'FLAB' && typeof v === 'object') return [v.ARES || '', v.TEXT ? ': ' + v.TEXT : ''];
  if (Array.isArray(v) && v.every(x => x && typeof x === 'object' && !Array.isArray(x))) return groupTable(field, v);
  if (Array.isArray(v)) return v.map(x => typeof x === 'object' ? jsonText(x) : String(x)).join(', ');
  if (typeof v === 'object') return h('dl', { class: 'kv' }, Object.entries(v).flatMap(([k, x]) => [h('dt', {}, k), h('dd', {}, fieldValue(k, x))]));
  return String(v);
}

// groupTable shows a group's entries (PSDT, CHOT, …) with its parts labelled, in its order.
function groupTable(field, entries) {
  if (!entries.length) return h('span', { class: 'muted' }, 'none');
  const labels = (GROUPS[field] || [field, {}])[1];
  const keys = [...new Set([...Object.keys(labels), ...entries.flatMap(Object.keys)])]
    .filter(k => entries.some(e => e[k] !== undefined && e[k] !== null && e[k] !== ''));
  const t = table(keys.map(k => ({ head: labels[k] ? `${labels[k]} (${k})` : k, cell: e => fieldValue(k, e[k]) })), entries);
  t.classList.add('group');
  return t;
}

// fieldName is a field's label with its SIS name: "Stands (PSDT)".
function fieldName(k) {
  const label = FIELD_LABEL[k] || (GROUPS[k] || [])[0];
  return label ? `${label} (${k})` : String(k);
}

// recordView shows a flight record as labelled rows: each field in FIELDS' order, then each
// group as a table; times in airport time.
function recordView(rec) {
  const rows = [];
  const seen = new Set();
  const row = (k, label) => {
    seen.add(k);
    if (rec[k] === undefined || rec[k] === null || rec[k] === '' || GROUPS[k]) return;
    rows.push(h('dt', { 'data-field': k }, label === k ? k : `${label} (${k})`), h('dd', { 'data-field': k }, fieldValue(k, rec[k])));
  };
  for (const [k, label] of FIELDS) row(k, label);
  for (const k of Object.keys(rec)) if (!seen.has(k) && !GROUPS[k] && !Array.isArray(rec[k])) row(k, k);
  const groups = Object.keys(GROUPS).concat(Object.keys(rec).filter(k => !GROUPS[k] && Array.isArray(rec[k]) && !FIELD_LABEL[k]))
    .filter(k => Array.isArray(rec[k]) && rec[k].length)
    .map(k => h('div', { class: 'group', id: 'record-' + k }, h('h3', {}, `${(GROUPS[k] || [k])[0]} (${k})`), fieldValue(k, rec[k])));
  return [h('dl', { class: 'kv record', id: 'record-fields' }, rows), groups];
}

views.flight = async ({ arg, params, gen, view }) => {
  const flid = arg;
  const found = params.get('q') ? h('p', { class: 'muted', id: 'flight-found' }, 'Found by searching ', h('q', {}, params.get('q')), '; ',
    link('/find?' + new URLSearchParams({ q: params.get('q'), list: '1' }).toString(), `all ${params.get('hits') || ''} hits`), '.') : '';
  const histBox = h('section', { class: 'card', id: 'flight-history' }, h('h2', {}, 'History'), h('p', { class: 'muted' }, 'Loading…'));
  const fieldsBox = h('section', { class: 'card', id: 'flight-fields' }, h('h2', {}, 'Changes by field'), h('p', { class: 'muted' }, 'Loading…'));
  const msgsBox = h('section', { class: 'card', id: 'flight-messages' }, h('h2', {}, 'Messages'), h('p', { class: 'muted' }, 'Loading…'));
  const evBox = h('section', { class: 'card', id: 'flight-events' }, h('h2', {}, 'Events'), h('p', { class: 'muted' }, 'Loading…'));
  let rec;
  try {
    rec = await api('GET', API.flight(flid));
  } catch (e) {
    if (e.status !== 404) throw e;
    rec = null;
  }
  if (!alive(gen)) return;
  const record = rec ? (rec.record || rec) : null;
  fill(view, h('h1', {}, `Flight ${flid} `, record ? h('span', { class: 'muted' }, `${record.FLNO || ''} ${record.MVIN === 'A' ? 'arrival' : record.MVIN === 'D' ? 'departure' : ''}`) : ''),
    found, h('section', { class: 'card', id: 'flight-record' }, h('h2', {}, 'Record'),
      rec ? [h('p', { class: 'muted' }, `local day ${rec.day || ''}, version ${rec.version ?? ''}, last changed by message `, rec.msg_id ? msgLink(rec.msg_id) : '—',
        `; times in airport time, ${zone()}.`), recordView(record)]
        : h('p', { class: 'muted' }, 'No stored record (deleted, never scheduled, or swept).')),
    fieldsBox, histBox, msgsBox, evBox);
  api('GET', API.flightHistory(flid)).then(res => {
    if (!alive(gen)) return;
    const list = Array.isArray(res) ? res : (res.history || res.changes || []);
    fill(histBox, h('h2', {}, 'History'), h('div', { id: 'flight-history-list' }, flightHistory(list)));
    fill(fieldsBox, h('h2', {}, 'Changes by field'), h('p', { class: 'muted' }, 'Each field with every value it took, when (the time msgx applied the message, airport time) and by which message; ',
      'the board as it stood at any of these times: Flights, As of.'), h('div', { id: 'flight-fields-list' }, fieldChanges(list)));
  }).catch(e => alive(gen) && [histBox, fieldsBox].forEach(b => fill(b, h('h2', {}, b === histBox ? 'History' : 'Changes by field'), h('p', { class: 'muted' }, describe(e)))));
  api('GET', API.messages + '?flid=' + encodeURIComponent(flid) + '&limit=100').then(res => {
    if (!alive(gen)) return;
    fill(msgsBox, h('h2', {}, 'Messages'), table([
      { head: 'Id', cell: m => msgLink(m.id) }, { head: 'Received', cell: m => timeEl(m.received_at) },
      { head: 'State', cell: m => [stateSpan(m.state), m.error_class ? ' ' + m.error_class : ''] },
      { head: 'Type', cell: m => m.type_tag || '' }, { head: 'Note', cell: m => srvText(m.note) },
    ], res.messages || [], { empty: 'No message names this flight.' }));
  }).catch(e => alive(gen) && fill(msgsBox, h('h2', {}, 'Messages'), h('p', { class: 'muted' }, describe(e))));
  api('GET', API.events + '?flid=' + encodeURIComponent(flid) + '&limit=200').then(res => {
    if (!alive(gen)) return;
    const evs = (res.events || []).filter(e => String(e.flight_key) === String(flid));
    fill(evBox, h('h2', {}, 'Events'), eventsTable(evs, false));
  }).catch(e => alive(gen) && fill(evBox, h('h2', {}, 'Events'), h('p', { class: 'muted' }, describe(e))));
};

// fieldChanges regroups a flight's history by field: for each field that changed, every change
// in order with its time, message, and old → new value.
function fieldChanges(list) {
  const by = new Map();
  for (const e of Array.isArray(list) ? list : []) {
    const changes = e.changes && typeof e.changes === 'object' && !Array.isArray(e.changes) ? Object.entries(e.changes) : [];
    for (const [k, c] of changes) {
      if (!by.has(k)) by.set(k, []);
      by.get(k).push({ at: e.at, msg_id: e.msg_id, type_tag: e.type_tag, old: c && c.old, new: c && c.new });
    }
  }
  if (by.size === 0) return h('p', { class: 'muted' }, 'No change recorded.');
  return [...by.entries()].map(([k, cs]) => h('div', { class: 'group', 'data-field': k }, h('h3', {}, fieldName(k)), table([
    { head: 'When', cell: c => timeEl(c.at) },
    { head: 'Message', cell: c => c.msg_id ? [msgLink(c.msg_id), ' ', c.type_tag || ''] : '' },
    { head: 'Old', cell: c => fieldValue(k, c.old) },
    { head: 'New', cell: c => fieldValue(k, c.new) },
  ], cs)));
}

// flightHistory lists each message that changed the flight with its field changes (old → new),
// falling back to a plain table for shapes it does not know.
function flightHistory(list) {
  if (!Array.isArray(list) || list.length === 0) return h('p', { class: 'muted' }, 'No change recorded.');
  return h('ol', { class: 'history' }, list.map(e => {
    const changes = e.changes || e.fields || e.diff;
    return h('li', {},
      e.msg_id ? ['message ', msgLink(e.msg_id), ' '] : '',
      e.type_tag ? e.type_tag + ' ' : '', e.at || e.changed_at ? h('span', { class: 'muted' }, timeEl(e.at || e.changed_at)) : '',
      e.op ? ' ' + e.op : '',
      Array.isArray(changes) ? table([
        { head: 'Field', cell: c => fieldName(c.field || c.name || '') },
        { head: 'Old', cell: c => fieldValue(c.field || c.name, c.old) },
        { head: 'New', cell: c => fieldValue(c.field || c.name, c.new) },
      ], changes) : changes && typeof changes === 'object' ? table([
        { head: 'Field', cell: c => fieldName(c[0]) },
        { head: 'Old', cell: c => fieldValue(c[0], c[1] && c[1].old) },
        { head: 'New', cell: c => fieldValue(c[0], c[1] && c[1].new) },
      ], Object.entries(changes)) : anyValue(Object.fromEntries(Object.entries(e).filter(([k]) => !['msg_id', 'type_tag', 'at', 'op'].includes(k)))));
  }));
}

// ---- requests and jobs ------------------------------------------------------------------------------

views.requests = async ({ params, gen, view }) => {
  let res;
  const q = new URLSearchParams({ limit: '200' });
  for (const k of ['after', 'before']) if (params.get(k)) q.set(k, params.get(k));
  try {
    res = await api('GET', API.requests + '?' + q.toString());
  } catch (e) {
    if (!alive(gen)) return;
    fill(view, h('h1', {}, 'Requests'), h('p', { class: 'muted' }, describe(e)));
    return;
  }
  if (!alive(gen)) return;
  const list = Array.isArray(res) ? res : (res.requests || []);
  const lt = liveTable([
    { head: 'Id', cell: r => String(r.id) }, { head: 'Type', cell: r => `${r.type || ''} ${r.styp || ''}` },
    { head: 'Window', cell: r => r.stdb ? `${r.stdb} – ${r.stde || ''}` : '' },
    { head: 'State', cell: r => stateSpan(r.state) }, { head: 'Re-sent', class: 'num', cell: r => String(r.resends ?? '') },
    { head: 'Created', cell: r => timeEl(r.created_at) }, { head: 'Sent', cell: r => r.waiting_for_gateway_s != null ? `waiting for gateway ${fmtAge(r.waiting_for_gateway_s)}` : timeEl(r.sent_at) },
    { head: 'Deadline', cell: r => timeEl(r.deadline_at) }, { head: 'Finished', cell: r => timeEl(r.finished_at) },
    { head: 'Answer', cell: r => r.answer_msg_id ? msgLink(r.answer_msg_id) : '' },
  ], list, { id: 'requests-table', rowId: r => r.id, empty: 'No request yet.' });
  const firstPage = !params.get('after') && !params.get('before');
  const head = firstPage ? followList({ gen, url: API.requests + '/stream?after=' + listSince(list, r => r.id, res), list: lt, what: 'request', name: 'requests' }) : [];
  fill(view, h('h1', {}, 'Requests'), h('p', { class: 'muted' }, 'The data requests msgx sent to the AODB (RQRD, RQFD) and the messages that answered them.'),
    head, lt.el, pageLinks('/requests', params, res, firstPage));
};

// JOB_KINDS are the jobs an admin may start, with what each does (README "Retention and
// scheduled jobs").
const JOB_KINDS = {
  ARCHIVE: 'ARCHIVE moves SUCCEEDED and SKIPPED messages processed more than a day ago to CMINMSGS_HST.',
  HISTORY_SWEEP: 'HISTORY_SWEEP writes the flights of days older than history.keep-days to the history store and deletes from the flight store only those written.',
  RETENTION: 'RETENTION deletes SENT events and archived finished messages older than retention.events and retention.archive.',
  PROJECTION_REBUILD: 'PROJECTION_REBUILD rebuilds the store that is not authoritative from the one that is (phase A: FLIGHT_STATE from Redis; rows Redis lacks are kept unless the parameters say prune).',
  CONSISTENCY_CHECK: 'CONSISTENCY_CHECK compares a sample of the flights of Redis and FLIGHT_STATE.',
  REDIS_RESTORE: 'REDIS_RESTORE writes FLIGHT_STATE back into Redis (phase A): everything, with new marks, or one flight (flid=N) or day (day=YYYY-MM-DD). A pump stopped because Redis lost its data runs it at once and resumes.',
};

// jobActive says whether a job is still to finish (queued, retried or running).
const jobActive = j => j.progress || j.state === 'PENDING' || j.state === 'FAILED';

// jobProgress is what a job is doing while it runs, else its result or last error.
function jobProgress(j) {
  if (j.progress) return h('span', { class: 'warn job-doing' }, `running ${fmtAge(j.progress.running_seconds)}: ${srvText(j.progress.doing)}`);
  return [srvText(j.result), j.last_error ? h('div', { class: 'error' }, srvText(j.last_error)) : null];
}

// views.jobs lists the jobs (every role), following the jobs stream (new jobs behind the
// "N new" bar, progress in place), and, at #/jobs/ID, one job, read again every 2 s while it
// is still to finish. An admin also gets the form that starts one.
views.jobs = async ({ arg, gen, view }) => {
  const kids = [h('h1', {}, arg ? 'Job ' + arg : 'Jobs')];
  if (!arg && can('admin')) kids.push(await jobForm());
  if (!alive(gen)) return;
  const box = h('div', { id: arg ? 'job-detail' : 'jobs-list' });
  kids.push(box);
  fill(view, ...kids);
  const cols = [
    { head: 'Id', cell: j => h('a', { href: '#/jobs/' + j.id }, String(j.id)) }, { head: 'Kind', cell: j => j.kind },
    { head: 'State', cell: j => j.progress ? h('span', { class: 'warn' }, 'RUNNING') : stateSpan(j.state) },
    { head: 'Attempts', class: 'num', cell: j => String(j.attempts) },
    { head: 'After message', cell: j => j.after_msg_id ? msgLink(j.after_msg_id) : '' },
    { head: 'Created', cell: j => timeEl(j.created_at) }, { head: 'Finished', cell: j => timeEl(j.finished_at) },
    { head: 'Progress / result / error', cell: jobProgress },
  ];
  const opts = { id: 'jobs-table', rowId: j => j.id, empty: 'No job yet.' };
  const refresh = async () => {
    if (!alive(gen)) return;
    let list;
    try {
      list = arg ? [await api('GET', API.jobs + '/' + encodeURIComponent(arg))] : ((await api('GET', API.jobs)).jobs || []);
    } catch (e) {
      if (alive(gen)) fill(box, h('p', { class: 'error', id: 'jobs-error' }, describe(e)));
      return;
    }
    if (!alive(gen)) return;
    if (!arg) {
      const lt = liveTable(cols, list, opts);
      box.before(...followList({ gen, url: API.jobs + '/stream?after=' + listSince(list, j => j.id, {}), list: lt, what: 'job', name: 'jobs' }));
      fill(box, lt.el);
      return;
    }
    if (list.some(jobActive)) setTimeout(refresh, 2000);
    fill(box, table(cols, list, opts));
  };
  await refresh();
};

// jobForm is an admin's form to start a job: the kinds this server can run (GET
// /api/v1/jobs/kinds), and those it cannot shown disabled with the reason (PROJECTION_REBUILD
// in phase B without a REDIS_FLIGHT target would go DEAD at once). A server without the
// route has every kind offered, saying it cannot tell.
async function jobForm() {
  let kinds, unknown = '';
  try {
    kinds = (await api('GET', API.jobKinds)).kinds;
    if (!Array.isArray(kinds)) throw new APIError(200, API.jobKinds + ': invalid answer (no kinds)', 'invalid_answer', API.jobKinds);
  } catch (e) {
    kinds = Object.keys(JOB_KINDS).map(k => ({ kind: k, runnable: true }));
    unknown = 'This server does not say which jobs can run here (' + describe(e) + '): every kind is offered.';
  }
  const info = Object.fromEntries(kinds.map(k => [k.kind, k]));
  const firstRunnable = (kinds.find(k => k.runnable) || {}).kind;
  const kind = h('select', { id: 'job-kind' }, kinds.map(k => h('option', {
    value: k.kind, disabled: !k.runnable, selected: k.kind === firstRunnable,
    title: k.runnable ? JOB_KINDS[k.kind] || '' : 'cannot run here: ' + (k.reason || 'no reason given'),
  }, k.kind + (k.runnable ? '' : ' (cannot run here)'))));
  const params = h('input', { id: 'job-params', type: 'text', placeholder: 'prune, flid=N, day=YYYY-MM-DD', size: 28 });
  const start = h('button', { type: 'button', id: 'job-start', disabled: !firstRunnable, onclick: async () => {
    const k = info[kind.value];
    if (!k || !k.runnable) return;
    const p = params.value.trim();
    const done = await confirmAction({
      title: 'Start a ' + k.kind + ' job' + (p ? ' (' + p + ')' : ''),
      body: [JOB_KINDS[k.kind] || k.kind, 'It runs in the message order, after every message accepted so far.'],
      confirmText: 'Start', act: () => api('POST', API.jobs, p ? { kind: k.kind, params: p } : { kind: k.kind }),
    });
    if (done) { flash(`Job ${done.id} queued.`); location.hash = '#/jobs/' + done.id; }
  } }, 'Start…');
  kind.addEventListener('change', () => { start.disabled = !(info[kind.value] || {}).runnable; });
  const list = table([
    { head: 'Kind', cell: k => k.kind },
    { head: 'Here', cell: k => k.runnable ? h('span', { class: 'ok' }, 'can run') : h('span', { class: 'muted job-reason' }, 'cannot run: ' + (k.reason || 'no reason given')) },
    { head: 'What it does', cell: k => JOB_KINDS[k.kind] || '' },
  ], kinds, { id: 'job-kinds', rowId: k => k.kind, rowClass: k => k.runnable ? null : 'disabled' });
  return h('section', { class: 'card', id: 'job-form' }, h('h2', {}, 'Start a job'),
    h('div', { class: 'actions' }, h('label', {}, 'Kind ', kind), h('label', {}, ' Parameters ', params), start),
    unknown ? h('p', { class: 'warn', id: 'job-kinds-unknown' }, unknown) : null,
    h('details', { open: kinds.some(k => !k.runnable) || null }, h('summary', {}, 'Job kinds and whether they can run here'), list));
}

views.audit = async ({ params, gen, view }) => {
  const q = new URLSearchParams({ limit: '200' });
  for (const k of ['after', 'before']) if (params.get(k)) q.set(k, params.get(k));
  const res = await api('GET', API.audit + '?' + q.toString());
  if (!alive(gen)) return;
  const list = Array.isArray(res) ? res : (res.audit || res.entries || []);
  const lt = liveTable([
    { head: 'Id', class: 'num', cell: a => String(a.id) }, { head: 'At', cell: a => timeEl(a.at) },
    { head: 'Actor', cell: a => a.actor || '' }, { head: 'Role', cell: a => a.role || '' },
    { head: 'Action', cell: a => a.action || '' }, { head: 'Subject', cell: a => a.subject || '' },
    { head: 'Detail', cell: a => srvText(a.detail) }, { head: 'Remote', cell: a => a.remote || '' },
  ], list, { id: 'audit-table', rowId: a => a.id, empty: 'No action recorded yet.' });
  const box = h('div', { id: 'audit-list' }, lt.el);
  const firstPage = !params.get('after') && !params.get('before');
  const head = firstPage ? followList({ gen, url: API.audit + '/stream?after=' + listSince(list, a => a.id, res), list: lt, what: 'action', name: 'audit' }) : [];
  fill(view, h('h1', {}, 'Audit log'), h('p', { class: 'muted' }, 'Every action taken through the API or this console, with the token that took it, newest first.'),
    head, box, pageLinks('/audit', params, res, firstPage));
};

// ---- search -----------------------------------------------------------------------------------------

// The header's search box: Enter opens #/find?q=…, which opens the flight when exactly one
// flight matches and lists the hits otherwise.
document.getElementById('search').addEventListener('submit', ev => {
  ev.preventDefault();
  const q = document.getElementById('search-q').value.trim();
  if (q) go('/find', { q });
});

views.find = async ({ params, gen, view }) => {
  const q = (params.get('q') || '').trim();
  document.getElementById('search-q').value = q;
  if (!q) { fill(view, h('h1', {}, 'Find'), h('p', { class: 'muted' }, 'Type a flight number, FLID, registration, stand, gate or text in the search box above.')); return; }
  fill(view, h('h1', {}, 'Find ', h('q', {}, q)), h('p', { class: 'muted' }, 'Searching…'));
  const res = await api('GET', API.find + '?' + new URLSearchParams({ q }).toString());
  if (!alive(gen)) return;
  const hits = res.hits || [];
  const flights = hits.filter(x => x.kind === 'flight');
  if (flights.length === 1 && !params.get('list')) {
    // One flight: open it; its page links back to every hit.
    location.replace('#/flight/' + encodeURIComponent(flights[0].id) + '?' + new URLSearchParams({ q, hits: String(hits.length) }).toString());
    return;
  }
  const more = res.more ? ' More matched than are shown: make the search more precise.' : '';
  fill(view, h('h1', {}, 'Find ', h('q', {}, q), ' ', h('span', { class: 'muted' }, `(${hits.length})`)),
    h('p', { class: 'muted', id: 'find-searched' }, 'Searched ' + (res.searched || '') + '.' + more),
    table([
      { head: 'Kind', cell: x => x.kind },
      { head: 'Id', cell: x => x.kind === 'flight' ? flightLink(x.id) : msgLink(x.id) },
      { head: 'Day', cell: x => x.day || '' },
      { head: 'Matched', cell: x => x.match },
      { head: 'What', cell: x => x.label },
    ], hits, { id: 'find-hits', rowId: x => x.kind + '-' + x.id, empty: 'Nothing matches.' }));
};

// ---- start ------------------------------------------------------------------------------------------

window.addEventListener('hashchange', route);
window.addEventListener('keydown', ev => {
  if (ev.key === 'Escape' && !document.getElementById('modal').hidden) document.getElementById('modal-cancel').click();
});
loadSession().then(route);
