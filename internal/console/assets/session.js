// Who is logged in to the console and the airport's zone: the state the log-in and
// GET /api/v1/me give, read by every other module.

// zone is the airport's zone, UTC until the server has named it.
export function zone() { return session.tz || 'UTC'; }

// session.user is {name, role} once known; role decides which actions are shown (the server
// decides what is allowed). auth is false when the server has no tokens and answers loopback
// clients only (no login, no logout).
export const session = { user: null, csrf: '', auth: true, checked: false, tz: '' };
const ROLE_RANK = { viewer: 1, operator: 2, admin: 3 };

export function can(role) {
  if (!session.user) return false;
  return (ROLE_RANK[session.user.role] || 0) >= ROLE_RANK[role];
}

// setSession takes the answer of the log-in or of GET /api/v1/me: who, the CSRF token, and the
// airport's zone, so that the first page after logging in shows airport time.
export function setSession(me) {
  session.user = { name: me.name || 'unknown', role: me.role || 'viewer' };
  if (me.csrf_token) session.csrf = me.csrf_token;
  session.auth = me.via !== 'loopback';
  if (me.timezone) session.tz = me.timezone;
}
