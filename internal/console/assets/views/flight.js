// #/flight/FLID: one flight's record as labelled rows, its changes, messages and events.
import { api, describe, routes } from '../api.js';
import { anyValue, fill, h, link, msgLink, stateSpan, table, timeEl } from '../dom.js';
import { alive } from '../router.js';
import { zone } from '../session.js';
import { RFC3339, jsonText, srvText } from '../time.js';
import { eventsTable } from './events.js';

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

export const flightView = async ({ arg, params, gen, view }) => {
  const flid = arg;
  const found = params.get('q') ? h('p', { class: 'muted', id: 'flight-found' }, 'Found by searching ', h('q', {}, params.get('q')), '; ',
    link('/find?' + new URLSearchParams({ q: params.get('q'), list: '1' }).toString(), `all ${params.get('hits') || ''} hits`), '.') : '';
  const histBox = h('section', { class: 'card', id: 'flight-history' }, h('h2', {}, 'History'), h('p', { class: 'muted' }, 'Loading…'));
  const fieldsBox = h('section', { class: 'card', id: 'flight-fields' }, h('h2', {}, 'Changes by field'), h('p', { class: 'muted' }, 'Loading…'));
  const msgsBox = h('section', { class: 'card', id: 'flight-messages' }, h('h2', {}, 'Messages'), h('p', { class: 'muted' }, 'Loading…'));
  const evBox = h('section', { class: 'card', id: 'flight-events' }, h('h2', {}, 'Events'), h('p', { class: 'muted' }, 'Loading…'));
  let rec;
  try {
    rec = await api(routes.flight, { args: { flid } });
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
  api(routes.flightHistory, { args: { flid } }).then(res => {
    if (!alive(gen)) return;
    const list = Array.isArray(res) ? res : (res.history || res.changes || []);
    fill(histBox, h('h2', {}, 'History'), h('div', { id: 'flight-history-list' }, flightHistory(list)));
    fill(fieldsBox, h('h2', {}, 'Changes by field'), h('p', { class: 'muted' }, 'Each field with every value it took, when (the time msgx applied the message, airport time) and by which message; ',
      'the board as it stood at any of these times: Flights, As of.'), h('div', { id: 'flight-fields-list' }, fieldChanges(list)));
  }).catch(e => alive(gen) && [histBox, fieldsBox].forEach(b => fill(b, h('h2', {}, b === histBox ? 'History' : 'Changes by field'), h('p', { class: 'muted' }, describe(e)))));
  api(routes.messages, { query: { flid, limit: 100 } }).then(res => {
    if (!alive(gen)) return;
    fill(msgsBox, h('h2', {}, 'Messages'), table([
      { head: 'Id', cell: m => msgLink(m.id) }, { head: 'Received', cell: m => timeEl(m.received_at) },
      { head: 'State', cell: m => [stateSpan(m.state), m.error_class ? ' ' + m.error_class : ''] },
      { head: 'Type', cell: m => m.type_tag || '' }, { head: 'Note', cell: m => srvText(m.note) },
    ], res.messages || [], { empty: 'No message names this flight.' }));
  }).catch(e => alive(gen) && fill(msgsBox, h('h2', {}, 'Messages'), h('p', { class: 'muted' }, describe(e))));
  api(routes.events, { query: { flid, limit: 200 } }).then(res => {
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
