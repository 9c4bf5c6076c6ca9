// #/audit: the operators' actions (admin).
import { api, routes, url } from '../api.js';
import { fill, h, timeEl } from '../dom.js';
import { followList, listSince, liveTable, pageLinks } from '../live.js';
import { alive } from '../router.js';
import { srvText } from '../time.js';

export const auditView = async ({ params, gen, view }) => {
  const q = new URLSearchParams({ limit: '200' });
  for (const k of ['after', 'before']) if (params.get(k)) q.set(k, params.get(k));
  const res = await api(routes.audit, { query: q });
  if (!alive(gen)) return;
  const list = Array.isArray(res) ? res : (res.audit || res.entries || []);
  const lt = liveTable([
    { head: 'Id', class: 'num', cell: a => String(a.id) }, { head: 'At', cell: a => timeEl(a.at) },
    { head: 'Actor', cell: a => a.actor || '' }, { head: 'Role', cell: a => a.role || '' },
    { head: 'Action', cell: a => a.action || '' }, { head: 'Subject', cell: a => a.subject || '' },
    { head: 'Detail', cell: a => srvText(a.detail) }, { head: 'Remote', cell: a => a.remote || '' },
  ], list, { id: 'audit-table', rowId: a => a.id, empty: 'No action recorded yet.' });
  const box = h('div', { id: 'audit-list' }, lt.el);
  const firstPage = !params.get('after') && !params.get('before');
  const head = firstPage ? followList({ gen, url: url(routes.auditStream, {}, { after: listSince(list, a => a.id, res) }), list: lt, what: 'action', name: 'audit' }) : [];
  fill(view, h('h1', {}, 'Audit log'), h('p', { class: 'muted' }, 'Every action taken through the API or this console, with the token that took it, newest first.'),
    head, box, pageLinks('/audit', params, res, firstPage));
};
