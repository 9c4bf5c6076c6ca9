// The server's JSON API as the console calls it: the routes it uses, the call itself and
// how a failed call is said. It and header.js import each other (a 401 redraws the header,
// whose log-out calls the API); neither uses the other before the page has started.
import { renderWho } from './header.js';
import { session } from './session.js';

// routes are the routes of the server's API the console calls, each "METHOD PATH" as
// docs/openapi/openapi.json names it; url() fills the {parameters}. No other module writes an
// API path: internal/console's TestConsoleCallsOnlyRoutes holds this table against the
// OpenAPI document, so a path the server does not serve fails a test, not an operator.
export const routes = {
  login: 'POST /api/v1/login',
  logout: 'POST /api/v1/logout',
  me: 'GET /api/v1/me',
  status: 'GET /api/v1/status',
  throughput: 'GET /api/v1/console/throughput',
  messages: 'GET /api/v1/messages',
  messagesStream: 'GET /api/v1/messages/stream',
  message: 'GET /api/v1/messages/{id}',
  raw: 'GET /api/v1/messages/{id}/raw',
  history: 'GET /api/v1/messages/{id}/history',
  decoded: 'GET /api/v1/console/messages/{id}/decoded',
  park: 'POST /api/v1/messages/{id}/park',
  replay: 'POST /api/v1/replay',
  events: 'GET /api/v1/events',
  eventsStream: 'GET /api/v1/events/stream',
  eventsReplay: 'POST /api/v1/events/replay',
  flights: 'GET /api/v1/flights',
  flight: 'GET /api/v1/flights/{flid}',
  flightHistory: 'GET /api/v1/flights/{flid}/history',
  find: 'GET /api/v1/find',
  ref: 'GET /api/v1/ref/{type}',
  requests: 'GET /api/v1/requests',
  requestsStream: 'GET /api/v1/requests/stream',
  jobs: 'GET /api/v1/jobs',
  job: 'GET /api/v1/jobs/{id}',
  jobStart: 'POST /api/v1/jobs',
  jobKinds: 'GET /api/v1/jobs/kinds',
  jobsStream: 'GET /api/v1/jobs/stream',
  dead: 'GET /api/v1/dead',
  deadStream: 'GET /api/v1/dead/stream',
  deadAck: 'POST /api/v1/dead/ack',
  audit: 'GET /api/v1/audit',
  auditStream: 'GET /api/v1/audit/stream',
  pumpPause: 'POST /api/v1/pump/pause',
  pumpResume: 'POST /api/v1/pump/resume',
  targetPause: 'POST /api/v1/targets/{name}/pause',
  targetResume: 'POST /api/v1/targets/{name}/resume',
};

// url is route's path with each {name} replaced by args[name], encoded, and query (an object
// or URLSearchParams) after a '?' when it has any: url(routes.message, { id: 7 }) is
// "/api/v1/messages/7".
export function url(route, args, query) {
  const path = route.slice(route.indexOf(' ') + 1).replace(/\{(\w+)\}/g, (_, k) => encodeURIComponent(args[k]));
  const q = query ? new URLSearchParams(query).toString() : '';
  return q ? path + '?' + q : path;
}
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
// opts: args and query as url() takes them; body, sent as JSON; text, an answer read as text
// (a raw message); noRedirect, a 401 that does not send to the login page.
export async function api(route, opts) {
  opts = opts || {};
  const method = route.slice(0, route.indexOf(' '));
  const path = url(route, opts.args, opts.query);
  const init = { method, credentials: 'same-origin', headers: { Accept: opts.text ? '*/*' : 'application/json' } };
  if (opts.body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(opts.body);
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
