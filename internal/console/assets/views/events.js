// #/events: the outbox events, by target, state and flight; and the events table the
// message and flight pages show.
import { replayDeadEvents } from '../actions.js';
import { api, routes, url } from '../api.js';
import { fill, flash, flightLink, h, msgLink, stateSpan, table, timeEl } from '../dom.js';
import { followList, listSince, liveTable, pageLinks } from '../live.js';
import { alive, go } from '../router.js';
import { can } from '../session.js';
import { jsonText, srvText } from '../time.js';

export function eventsTable(evs, selectable, selected) {
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

export const eventsView = async ({ params, gen, view }) => {
  const target = params.get('target') || '', state = params.get('state') || '', flid = params.get('flid') || '';
  const st = await api(routes.status).catch(() => ({}));
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
  const res = await api(routes.events, { query: q });
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
  q.set('after', listSince(evs, e => e.event_id, res));
  const head = firstPage ? followList({ gen, url: url(routes.eventsStream, {}, q),
    list: lt, what: 'event', name: 'events' }) : [];
  fill(view, h('h1', {}, 'Events', target ? ' of ' + target : ''), form, actions, head, tableBox, pageLinks('/events', params, res, firstPage));
};
