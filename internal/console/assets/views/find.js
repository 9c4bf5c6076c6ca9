// #/find?q=: flights and messages by number, FLID, registration, stand, gate or text.
import { api, routes } from '../api.js';
import { fill, flightLink, h, msgLink, table } from '../dom.js';
import { alive } from '../router.js';

export const findView = async ({ params, gen, view }) => {
  const q = (params.get('q') || '').trim();
  document.getElementById('search-q').value = q;
  if (!q) { fill(view, h('h1', {}, 'Find'), h('p', { class: 'muted' }, 'Type a flight number, FLID, registration, stand, gate or text in the search box above.')); return; }
  fill(view, h('h1', {}, 'Find ', h('q', {}, q)), h('p', { class: 'muted' }, 'Searching…'));
  const res = await api(routes.find, { query: { q } });
  if (!alive(gen)) return;
  const hits = res.hits || [];
  const flights = hits.filter(x => x.kind === 'flight');
  if (flights.length === 1 && !params.get('list')) {
    // One flight: open it; its page links back to every hit.
    location.replace('#/flight/' + encodeURIComponent(flights[0].id) + '?' + new URLSearchParams({ q, hits: String(hits.length) }).toString());
    return;
  }
  const more = res.more ? ' More matched than are shown: make the search more precise.' : '';
  fill(view, h('h1', {}, 'Find ', h('q', {}, q), ' ', h('span', { class: 'muted' }, `(${hits.length})`)),
    h('p', { class: 'muted', id: 'find-searched' }, 'Searched ' + (res.searched || '') + '.' + more),
    table([
      { head: 'Kind', cell: x => x.kind },
      { head: 'Id', cell: x => x.kind === 'flight' ? flightLink(x.id) : msgLink(x.id) },
      { head: 'Day', cell: x => x.day || '' },
      { head: 'Matched', cell: x => x.match },
      { head: 'What', cell: x => x.label },
    ], hits, { id: 'find-hits', rowId: x => x.kind + '-' + x.id, empty: 'Nothing matches.' }));
};
