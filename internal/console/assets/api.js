// The server's JSON API as the console calls it: the routes it uses, the call itself and
// how a failed call is said. It and header.js import each other (a 401 redraws the header,
// whose log-out calls the API); neither uses the other before the page has started.
import { renderWho } from './header.js';
import { session } from './session.js';

export const API = {
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

export const STATES = ['PENDING', 'FAILED', 'DEAD', 'SUCCEEDED', 'SKIPPED'];
export const CLASSES = ['MALFORMED', 'CODEC_ERROR', 'UNSUPPORTED', 'ORPHAN', 'INFRA', 'EXHAUSTED', 'PARKED', 'REJECTED'];

// APIError is a failed call: status is the HTTP status (0: no answer), path the route called.
export class APIError extends Error {
  constructor(status, message, code, path) { super(message); this.status = status; this.code = code; this.path = path; }
}

// api calls the JSON API. State-changing calls carry the CSRF token that the login (or
// GET /api/v1/me after a reload) gave; the session cookie itself is HttpOnly. A 401 sends the
// user to the login page. An answer that is not JSON (a 200 as much as an error) fails the call
// with the route named: it is never shown as if it were an empty answer.
export async function api(method, path, body, opts) {
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

export function describe(e) {
  if (e instanceof APIError) {
    if (e.status === 403 && e.code === 'csrf') return 'Refused as a possible cross-site request (' + e.message + '); reload the page and try again.';
    if (e.status === 403) return 'Not allowed: ' + e.message;
    if (e.status === 404 && e.code === 'not_found' && /no route/.test(e.message)) return 'This server does not offer that yet (' + e.message + ')';
    return e.message + (e.status ? ` (HTTP ${e.status})` : '');
  }
  return String(e && e.message || e);
}

// failedRoute says what failed, naming the route: "/api/v1/status: invalid answer (…)".
export function failedRoute(path, e) {
  const d = describe(e);
  return d.startsWith(path) ? d : path + ': ' + d;
}
