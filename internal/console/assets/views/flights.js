// #/flights: the board of an airport day, live or as it stood at a past time.
import { api, describe, routes } from '../api.js';
import { fill, flightLink, h, table } from '../dom.js';
import { alive, go } from '../router.js';
import { addDays, isoDay, zoneParts } from '../time.js';

// The board shows airport time (sis.timezone, which the flights answer names), never the
// browser's: a screen in any zone shows the times the airport's staff and passengers see.
const BOARD_REFRESH_MS = 5000;
const BOARD_CHANGED_MS = 60000;

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
    const res = await api(routes.ref, { args: { type: 'STTS' } });
    return Object.fromEntries((res.records || []).map(e => [e.key, e.fields || {}]));
  } catch (e) {
    return {};
  }
}

// boardAt reads the board's time control: a time of day (08:15, seconds optional) or a local
// date and time (2026-12-06T08:15 or with a space), airport time; '' is the live board.
const boardAt = s => /^\d{2}:\d{2}(:\d{2})?$/.test(s) || /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2})?$/.test(s);

export const flightsView = async ({ params, gen, view }) => {
  const f = { ad: params.get('ad') || '', airline: params.get('airline') || '', terminal: params.get('terminal') || '' };
  // at: the board as it stood then (GET /api/v1/flights?as_of=, rebuilt from the messages);
  // none: the live board, refreshed every BOARD_REFRESH_MS.
  const at = (params.get('at') || '').trim();
  const qp = new URLSearchParams();
  if (params.get('day')) qp.set('day', params.get('day'));
  if (at) qp.set('as_of', at.replace(' ', 'T'));
  let first, statuses;
  try {
    [first, statuses] = await Promise.all([api(routes.flights, { query: qp }), boardStatuses()]);
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
      const res = await api(routes.flights, { query: { day } });
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
