// #/messages: the messages with their filters, following new ones.
import { replayMessages } from '../actions.js';
import { CLASSES, STATES, api, routes, url } from '../api.js';
import { fill, flash, h, link, msgLink, stateSpan, timeEl } from '../dom.js';
import { followList, listSince, liveTable, pageLinks } from '../live.js';
import { alive, go } from '../router.js';
import { can, zone } from '../session.js';
import { airportInstant, srvText } from '../time.js';

const MSG_FILTERS = ['state', 'class', 'tag', 'flid', 'from', 'to', 'q'];

export const messagesView = async ({ params, gen, view }) => {
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
  const res = await api(routes.messages, { query: q });
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
    head.push(followList({ gen, url: url(routes.messagesStream, {}, { after: listSince(ms, m => m.id, res) }), list: lt, matches, what: 'message', name: 'messages' }));
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
