// #/requests: the data requests msgx sent to the AODB and their answers.
import { api, describe, routes, url } from '../api.js';
import { fill, h, msgLink, stateSpan, timeEl } from '../dom.js';
import { followList, listSince, liveTable, pageLinks } from '../live.js';
import { alive } from '../router.js';
import { fmtAge } from '../time.js';

export const requestsView = async ({ params, gen, view }) => {
  let res;
  const q = new URLSearchParams({ limit: '200' });
  for (const k of ['after', 'before']) if (params.get(k)) q.set(k, params.get(k));
  try {
    res = await api(routes.requests, { query: q });
  } catch (e) {
    if (!alive(gen)) return;
    fill(view, h('h1', {}, 'Requests'), h('p', { class: 'muted' }, describe(e)));
    return;
  }
  if (!alive(gen)) return;
  const list = Array.isArray(res) ? res : (res.requests || []);
  const lt = liveTable([
    { head: 'Id', cell: r => String(r.id) }, { head: 'Type', cell: r => `${r.type || ''} ${r.styp || ''}` },
    { head: 'Window', cell: r => r.stdb ? `${r.stdb} – ${r.stde || ''}` : '' },
    { head: 'State', cell: r => stateSpan(r.state) }, { head: 'Re-sent', class: 'num', cell: r => String(r.resends ?? '') },
    { head: 'Created', cell: r => timeEl(r.created_at) }, { head: 'Sent', cell: r => r.waiting_for_gateway_s != null ? `waiting for gateway ${fmtAge(r.waiting_for_gateway_s)}` : timeEl(r.sent_at) },
    { head: 'Deadline', cell: r => timeEl(r.deadline_at) }, { head: 'Finished', cell: r => timeEl(r.finished_at) },
    { head: 'Answer', cell: r => r.answer_msg_id ? msgLink(r.answer_msg_id) : '' },
  ], list, { id: 'requests-table', rowId: r => r.id, empty: 'No request yet.' });
  const firstPage = !params.get('after') && !params.get('before');
  const head = firstPage ? followList({ gen, url: url(routes.requestsStream, {}, { after: listSince(list, r => r.id, res) }), list: lt, what: 'request', name: 'requests' }) : [];
  fill(view, h('h1', {}, 'Requests'), h('p', { class: 'muted' }, 'The data requests msgx sent to the AODB (RQRD, RQFD) and the messages that answered them.'),
    head, lt.el, pageLinks('/requests', params, res, firstPage));
};
