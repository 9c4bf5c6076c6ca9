// Newest-first lists that follow their stream: the live table, the "N new" bar and tail,
// and the links to older and newer pages.
import { h } from './dom.js';
import { alive, openLive } from './router.js';

// pageLinks are the links to the newer and older pages of a newest-first listing (the
// answer's prev and next cursors, "after=…" and "before=…").
export function pageLinks(path, params, res, firstPage) {
  const to = (frag, id, text) => {
    const p = Object.fromEntries(params);
    delete p.after; delete p.before;
    const [k, v] = String(frag).split('=');
    p[k] = v;
    return h('a', { href: '#' + path + '?' + new URLSearchParams(p).toString(), id }, text);
  };
  return h('p', { class: 'pages' },
    !firstPage && res.prev ? [to(res.prev, 'prev-page', '← Newer'), ' '] : null,
    !firstPage ? [h('a', { href: '#' + path + '?' + new URLSearchParams(Object.fromEntries([...params].filter(([k]) => k !== 'after' && k !== 'before'))).toString(), id: 'newest-page' }, 'Newest'), ' '] : null,
    res.next ? to(res.next, 'next-page', 'Older →') : null);
}

// LIST_WINDOW is how many rows a live list holds: arrivals go on top and the oldest rows
// beyond it leave (the older pages still show them). A list that kept every row and redrew
// itself on each arrival took a tab from 650 MB to 2.6 GB in a 40-flight burst.
const LIST_WINDOW = 500;
// LIST_FLUSH_MS gathers the arrivals and changes of a burst into one change of the page.
const LIST_FLUSH_MS = 100;

// liveTable is a newest-first table that takes arrivals and changes without being redrawn:
// arrivals are inserted on top, the rows beyond LIST_WINDOW removed from the bottom, a
// changed row replaced in place. cols are as table()'s; opts.rowId names a row (the list's
// key: numbers growing with time), opts.id, opts.rowClass and opts.empty as table()'s.
export function liveTable(cols, rows, opts) {
  const key = r => String(opts.rowId(r));
  const body = h('tbody', {});
  const tbl = h('table', { id: opts.id }, h('thead', {}, h('tr', {}, cols.map(c => h('th', { class: c.class }, c.head)))), body);
  const empty = h('p', { class: 'muted' }, opts.empty || 'Nothing here.');
  const el = h('div', { class: 'live-table' }, empty, tbl);
  const shown = new Map(); // key → tr
  const rowEl = r => h('tr', { 'data-id': key(r), class: opts.rowClass ? opts.rowClass(r) : null },
    cols.map(c => h('td', { class: c.class }, c.cell(r))));
  const settle = () => {
    while (shown.size > LIST_WINDOW) {
      const last = body.lastElementChild;
      shown.delete(last.dataset.id);
      last.remove();
    }
    empty.hidden = shown.size > 0;
    tbl.hidden = shown.size === 0;
  };
  const lt = {
    el,
    key,
    size: () => shown.size,
    has: r => shown.has(key(r)),
    // oldest is the key of the bottom row (a number), or -Infinity when the window has room.
    oldest: () => shown.size < LIST_WINDOW ? -Infinity : Number(body.lastElementChild.dataset.id),
    // replace shows r's new value in place; false when r is not shown.
    replace(r) {
      const tr = shown.get(key(r));
      if (!tr) return false;
      const next = rowEl(r);
      tr.replaceWith(next);
      shown.set(key(r), next);
      return true;
    },
    // prepend puts rs (newest first) on top, in one change of the page.
    prepend(rs) {
      const frag = document.createDocumentFragment();
      for (const r of rs.slice(0, LIST_WINDOW)) {
        if (lt.replace(r)) continue;
        const tr = rowEl(r);
        shown.set(key(r), tr);
        frag.append(tr);
      }
      body.prepend(frag);
      settle();
    },
    // reset shows rs (newest first) instead of every row (a page read again).
    reset(rs) {
      body.replaceChildren();
      shown.clear();
      lt.prepend(rs);
    },
  };
  lt.prepend(rows || []);
  return lt;
}

// followList makes the first page of a newest-first list (a liveTable) follow its stream
// (url, the list's filters and after=listSince): arrivals wait behind an "N new" bar (a click
// shows them) so that the rows do not move under the reader, or, with Tail on, go on top as
// they come; an update replaces its row, or arrives when the list lacks it and it is newer
// than the list's oldest row (it came to match the filter). matches (optional) says whether
// the list shows a row. Arrivals and changes are applied every LIST_FLUSH_MS, a burst at
// once; the rows waiting behind the bar are bounded by LIST_WINDOW as the list is. Tail is
// per list (name), off until turned on, and remembered for that list in this tab only.
// It returns what goes above the list: the tail switch, the connection's state, the bar.
export function followList({ gen, url, list, matches, what, name }) {
  const fresh = new Map(); // arrivals not shown yet, oldest first, at most LIST_WINDOW
  let freshCount = 0; // arrivals behind the bar, those beyond the window included
  const tailKey = 'msgx.tail.' + name;
  const newBar = h('button', { type: 'button', id: 'new-bar', class: 'new-bar', hidden: true, onclick: () => showFresh() });
  const tail = h('input', { type: 'checkbox', id: 'tail-toggle', checked: sessionGet(tailKey) === '1' });
  const liveNote = h('span', { class: 'muted', id: 'live-state' });
  let arrivals = [], updates = new Map(), timer = 0, dropped = 0;
  const newestFirst = rows => rows.reverse();
  const showFresh = () => {
    list.prepend(newestFirst([...fresh.values()]));
    fresh.clear();
    freshCount = 0;
    newBar.hidden = true;
  };
  const wanted = r => !matches || matches(r);
  const flush = () => {
    timer = 0;
    if (!alive(gen)) return;
    const came = arrivals;
    const changed = updates;
    arrivals = [];
    updates = new Map();
    const add = [];
    for (const came1 of came) {
      const k = list.key(came1);
      // A change read in the same interval is the newer value of the arrival.
      const r = changed.get(k) || came1;
      changed.delete(k);
      if (!wanted(r) || fresh.has(k)) continue;
      if (list.replace(r)) continue;
      add.push(r);
    }
    for (const r of changed.values()) {
      const k = list.key(r);
      if (list.replace(r)) continue;
      if (fresh.has(k)) { fresh.set(k, r); continue; }
      // Now in a state the filter selects, and within the window: it arrives.
      if (wanted(r) && Number(k) > list.oldest()) add.push(r);
    }
    const skipped = dropped;
    dropped = 0;
    if (!add.length) return;
    add.sort((a, b) => Number(list.key(a)) - Number(list.key(b)));
    if (tail.checked) {
      list.prepend(newestFirst(add));
      return;
    }
    for (const r of add) fresh.set(list.key(r), r);
    for (const k of fresh.keys()) {
      if (fresh.size <= LIST_WINDOW) break;
      fresh.delete(k);
    }
    freshCount += add.length + skipped;
    newBar.textContent = `${freshCount} new — show`;
    newBar.hidden = false;
  };
  const later = () => { if (!timer) timer = setTimeout(flush, LIST_FLUSH_MS); };
  const arrive = r => {
    if (!alive(gen)) return;
    arrivals.push(r);
    if (arrivals.length > 2 * LIST_WINDOW) { // a throttled (hidden) tab: keep what the window holds
      dropped += arrivals.length - LIST_WINDOW;
      arrivals = arrivals.slice(-LIST_WINDOW);
    }
    later();
  };
  const update = r => {
    if (!alive(gen)) return;
    updates.set(list.key(r), r);
    later();
  };
  tail.addEventListener('change', () => {
    sessionSet(tailKey, tail.checked ? '1' : '0');
    if (tail.checked && fresh.size) showFresh();
  });
  openLive(url, arrive, update, state => {
    if (alive(gen)) liveNote.textContent = state;
  });
  return [h('div', { class: 'actions live' }, h('label', { title: `Show each new ${what} on top as it arrives (this list only)` }, tail, ' Tail'), ' ', liveNote), newBar];
}

// sessionGet and sessionSet keep a setting for this tab (sessionStorage), or not at all
// where the browser refuses storage.
function sessionGet(k) { try { return sessionStorage.getItem(k); } catch (e) { return null; } }
function sessionSet(k, v) { try { sessionStorage.setItem(k, v); } catch (e) { /* not kept */ } }
// Tail was once one setting for every list, kept for good: forget it.
try { localStorage.removeItem('msgx.tail'); } catch (e) { /* no storage */ }

// listSince is the stream cursor of a first page: its newest row, or, when it is empty, the
// answer's prev cursor ("after=N").
export function listSince(rows, key, res) {
  return rows.length ? key(rows[0]) : Number(String(res.prev || 'after=0').split('=')[1]) || 0;
}
