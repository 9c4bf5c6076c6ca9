// The header on every page: who is logged in (and the log-out), and the alarm saying what
// stops work.
import { api, describe, routes } from './api.js';
import { fill, flash, h, link } from './dom.js';
import { can, session, setSession, zone } from './session.js';
import { fmtAge, srvText } from './time.js';

export async function loadSession() {
  try {
    setSession(await api(routes.me, { noRedirect: true }));
  } catch (e) {
    session.user = null;
    if (e.status !== 401) flash('Who you are is unknown: ' + describe(e), true);
  }
  session.checked = true;
  renderWho();
}

export function renderWho() {
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
  try { await api(routes.logout, { body: {}, noRedirect: true }); } catch (e) { /* already out */ }
  session.user = null;
  session.csrf = '';
  renderWho();
  location.hash = '#/login';
}

// renderAlarm shows in the header, on every page, what stops work: the pump halted (phase A:
// Redis lost data) or paused (for how long, by whom, why), and the paused targets; hidden
// while everything runs. The overview renders it at each refresh, every other page on arrival.
export function renderAlarm(st) {
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
