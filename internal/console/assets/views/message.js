// #/message/ID: one message, its history, raw and decoded body, and its events.
import { parkButton, replayMessages } from '../actions.js';
import { api, describe, routes } from '../api.js';
import { anyValue, fill, flightLink, h, stateSpan, table, timeEl } from '../dom.js';
import { alive } from '../router.js';
import { can, zone } from '../session.js';
import { jsonText, srvText } from '../time.js';
import { eventsTable } from './events.js';

const RAW_SHOW_BYTES = 1 << 20;

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

export const messageView = async ({ arg, gen, view }) => {
  const id = arg;
  const m = await api(routes.message, { args: { id } });
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
    api(routes.requests, { query: { limit: 1000 } }).then(res => {
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
  api(routes.raw, { args: { id }, text: true }).then(raw => alive(gen) && renderRaw(rawBox, raw))
    .catch(e => alive(gen) && fill(rawBox, h('h2', {}, 'Raw body'), h('p', { class: 'muted' }, describe(e))));
  api(routes.decoded, { args: { id } }).then(d => {
    if (!alive(gen)) return;
    fill(decodedBox, h('h2', {}, 'Decoded'),
      d.error ? h('p', { class: 'error', id: 'decode-error' }, `${d.class}: ${d.error}`) : null,
      d.decoded ? [h('p', { class: 'muted' }, 'Times in airport time, ' + zone() + '.'), h('pre', { id: 'decoded-json' }, jsonText(d.decoded))] : null);
  }).catch(e => alive(gen) && fill(decodedBox, h('h2', {}, 'Decoded'), h('p', { class: 'muted' }, describe(e))));
  api(routes.history, { args: { id } }).then(res => alive(gen) && renderHistory(historyBox, res))
    .catch(e => alive(gen) && fill(historyBox, h('h2', {}, 'History'), h('p', { class: 'muted' }, describe(e))));
  api(routes.events, { query: { msg_id: id, limit: 200 } }).then(res => {
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
