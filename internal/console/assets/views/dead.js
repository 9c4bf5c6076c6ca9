// #/dead: the dead letters, messages and events, to replay or acknowledge.
import { ackDead, replayDeadEvents, replayMessages } from '../actions.js';
import { CLASSES, api, failedRoute, routes, url } from '../api.js';
import { fill, h, link, msgLink, table, timeEl } from '../dom.js';
import { followList, liveTable } from '../live.js';
import { alive } from '../router.js';
import { can } from '../session.js';
import { fmtTime, srvText } from '../time.js';

export const deadView = async ({ gen, view }) => {
  const [msgs, st, dead] = await Promise.all([
    api(routes.messages, { query: { state: 'DEAD', limit: 200 } }),
    api(routes.status).catch(e => ({ failed: e })),
    api(routes.dead, { query: { kind: 'message', limit: 1000 } }).catch(() => ({ acks: [] })),
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
  kids.push(followList({ gen, url: url(routes.deadStream), list: dl, what: 'dead letter', name: 'dead' }), dl.el);
  if (msgs.next) kids.push(h('p', {}, link('/messages?state=DEAD&' + msgs.next, 'More…')));
  if (st.failed) {
    kids.push(h('h2', {}, 'Events'), h('p', { class: 'banner', id: 'dead-events-error', role: 'alert' },
      'Dead events unknown: ', failedRoute(url(routes.status), st.failed)));
    fill(view, ...kids);
    return;
  }
  const ts = (st.extra && Array.isArray(st.extra.targets) ? st.extra.targets : []).filter(t => t.dead > 0);
  kids.push(h('h2', {}, 'Events'), table([
    { head: 'Target', cell: t => link('/events?state=DEAD&target=' + encodeURIComponent(t.target), t.target) },
    { head: 'Dead', class: 'num', cell: t => String(t.dead) },
    { head: '', cell: t => can('operator') ? [h('button', { type: 'button', onclick: () => replayDeadEvents(t.target, t.dead) }, 'Replay all…'), ' ',
      h('button', { type: 'button', id: 'ack-events-' + t.target, onclick: async () => {
        const evs = await api(routes.events, { query: { state: 'DEAD', limit: 1000, target: t.target } });
        const ids = (evs.events || []).map(e => e.event_id);
        if (ids.length) ackDead('event', ids, `${ids.length} dead event(s) of ${t.target}`);
      } }, 'Acknowledge all…')] : '' },
  ], ts, { empty: 'No DEAD event.' }));
  fill(view, ...kids);
};
