// Building the page: elements, links, tables and values of unknown shape. Server data is
// written as text or attributes only, never parsed as markup.
import { zone } from './session.js';
import { RFC3339, fmtTime, jsonText, srvText } from './time.js';

// h builds an element. props: class, text, on<event>, anything else as an attribute; children
// are nodes or values shown as text.
export function h(tag, props, ...kids) {
  const el = document.createElement(tag);
  setProps(el, props);
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

function setProps(el, props) {
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.setAttribute('class', v);
    else if (k === 'text') el.textContent = String(v);
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

// fill replaces el's children with kids (nodes or text; null, undefined and false are left out).
export function fill(el, ...kids) {
  el.replaceChildren();
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

export function svg(tag, attrs, ...kids) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const kid of kids.flat()) if (kid) el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  return el;
}

// link returns an in-console link; path is built from numbers and encoded parts only.
export function link(path, text) { return h('a', { href: '#' + path }, text); }
export function msgLink(id) { return link('/message/' + encodeURIComponent(id), String(id)); }
export function flightLink(flid) { return link('/flight/' + encodeURIComponent(flid), String(flid)); }
export function stateSpan(st) { return h('span', { class: 'state-' + String(st || '').replace(/[^A-Z_]/g, '') }, st || ''); }

// timeEl is fmtTime(s) in an element whose tooltip names the zone.
export function timeEl(s) {
  if (!s) return '';
  return h('time', { datetime: s, title: 'airport time, ' + zone() }, fmtTime(s));
}

export function flash(text, isError) {
  const box = document.getElementById('flash');
  const m = h('div', { class: 'msg' + (isError ? ' error' : ''), role: isError ? 'alert' : 'status' }, text);
  box.append(m);
  setTimeout(() => m.remove(), isError ? 12000 : 6000);
}

// table renders rows (objects) with columns [{head, cell(row) → node|text, class}].
export function table(cols, rows, opts) {
  opts = opts || {};
  if (!rows || rows.length === 0) return h('p', { class: 'muted' }, opts.empty || 'Nothing here.');
  return h('table', { id: opts.id },
    h('thead', {}, h('tr', {}, cols.map(c => h('th', { class: c.class }, c.head)))),
    h('tbody', {}, rows.map(r => h('tr', { 'data-id': opts.rowId ? opts.rowId(r) : null, class: opts.rowClass ? opts.rowClass(r) : null },
      cols.map(c => h('td', { class: c.class }, c.cell(r)))))));
}

// anyValue shows a value of a shape the console does not know in advance: an array of
// objects as a table, an object as key/value pairs, anything else as text.
export function anyValue(v) {
  if (v === null || v === undefined) return h('span', { class: 'muted' }, '—');
  if (Array.isArray(v)) {
    if (v.length === 0) return h('span', { class: 'muted' }, 'none');
    if (v.every(x => x && typeof x === 'object' && !Array.isArray(x))) {
      const keys = [...new Set(v.flatMap(Object.keys))];
      return table(keys.map(k => ({ head: k, cell: r => cellValue(k, r[k]) })), v);
    }
    return h('span', {}, v.map(x => typeof x === 'object' ? jsonText(x) : RFC3339.test(String(x)) ? fmtTime(x) : String(x)).join(', '));
  }
  if (typeof v === 'object') {
    return h('dl', { class: 'kv' }, Object.entries(v).flatMap(([k, x]) => [h('dt', {}, k), h('dd', {}, cellValue(k, x))]));
  }
  return String(v);
}

function cellValue(key, v) {
  if (v === null || v === undefined) return '';
  if (/msg_id$/.test(key) && typeof v === 'number') return msgLink(v);
  if (key === 'state' && typeof v === 'string') return stateSpan(v);
  if (typeof v === 'string' && RFC3339.test(v)) return timeEl(v);
  if (typeof v === 'object') return h('code', {}, jsonText(v).replace(/\s*\n\s*/g, ' '));
  return typeof v === 'string' ? srvText(v) : String(v);
}
