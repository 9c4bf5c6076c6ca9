// #/ (the overview): counts, the head of the queue, the pump, throughput, targets and
// recent problems, refreshed every few seconds.
import { parkButton, pumpAction, replayDeadEvents, targetAction } from '../actions.js';
import { APIError, STATES, api, describe, failedRoute, routes, url } from '../api.js';
import { fill, h, link, msgLink, stateSpan, svg, table, timeEl } from '../dom.js';
import { renderAlarm } from '../header.js';
import { alive } from '../router.js';
import { can } from '../session.js';
import { ago, fmtAge, fmtTime, srvText } from '../time.js';

const REFRESH_MS = 3000;

export const overviewView = async ({ gen, view }) => {
  const counts = h('div', { class: 'cards', id: 'counts' });
  const pump = h('section', { class: 'card', id: 'pump' });
  const head = h('section', { class: 'card', id: 'head' });
  const chart = h('section', { class: 'card', id: 'throughput' });
  const targets = h('section', { class: 'card', id: 'targets' });
  const recent = h('section', { class: 'card', id: 'recent' });
  const updated = h('p', { class: 'muted', id: 'updated' });
  // A failed refresh shows the banner, naming the route, and keeps the last good figures,
  // marked stale: never zero counts or "nothing waits" from an answer that did not come.
  const banner = h('div', { class: 'banner', id: 'status-error', role: 'alert', hidden: true });
  const figures = [counts, head, pump, targets, recent];
  fill(view, h('h1', {}, 'Overview'), banner, counts, head, pump, chart, targets, recent, updated);
  for (const el of [...figures, chart]) el.hidden = true; // until the first good answer
  let tick = 0, goodAt = null;
  const refresh = async () => {
    if (!alive(gen)) return;
    try {
      const st = await api(routes.status);
      if (!alive(gen)) return;
      if (!st || typeof st !== 'object' || !st.counts || typeof st.counts !== 'object') {
        throw new APIError(200, `${url(routes.status)}: invalid answer (no counts): ${JSON.stringify(st).slice(0, 120)}`, 'invalid_answer', url(routes.status));
      }
      renderCounts(counts, st);
      renderHead(head, st);
      renderPump(pump, st);
      renderTargets(targets, st);
      renderRecent(recent, st);
      renderAlarm(st);
      if (tick % 5 === 0) {
        api(routes.throughput).then(tp => alive(gen) && renderThroughput(chart, tp))
          .catch(e => alive(gen) && fill(chart, h('h2', {}, 'Throughput'), h('p', { class: 'muted' }, describe(e))));
      }
      tick++;
      goodAt = new Date().toISOString();
      updated.textContent = 'Updated ' + fmtTime(goodAt) + '; refreshes every ' + REFRESH_MS / 1000 + ' s.';
      updated.classList.remove('error');
      banner.hidden = true;
      for (const el of [...figures, chart]) { el.classList.remove('stale'); el.hidden = false; }
    } catch (e) {
      if (!alive(gen)) return;
      const what = failedRoute(url(routes.status), e);
      fill(banner, h('b', {}, 'Status unknown: '), what,
        h('div', { id: 'stale-note' }, goodAt ? `The figures below are stale: the last good answer was at ${fmtTime(goodAt)}.` : 'No figures yet: no good answer so far.'));
      banner.hidden = false;
      if (goodAt) for (const el of figures) el.classList.add('stale');
      updated.textContent = 'Could not refresh: ' + what;
      updated.classList.add('error');
    }
    setTimeout(refresh, REFRESH_MS);
  };
  await refresh();
};

// renderCounts shows the messages per state; DEAD counts only the dead letters nobody has
// acknowledged yet (the acknowledged ones are kept for audit and said apart, in grey).
function renderCounts(el, st) {
  const c = st.counts || {};
  const dead = st.extra && st.extra.dead && st.extra.dead.messages;
  fill(el, ...STATES.map(s => {
    const acked = s === 'DEAD' && dead ? dead.acknowledged : 0;
    const n = s === 'DEAD' && dead ? dead.unacknowledged : (c[s] || 0);
    return h('a', { class: 'count', href: s === 'DEAD' ? '#/dead' : '#/messages?state=' + s, id: 'count-' + s },
      h('b', { class: n ? 'state-' + s : 'muted' }, String(n)), s,
      acked ? h('span', { class: 'muted', id: 'count-DEAD-acked' }, ` (+${acked} acknowledged)`) : null);
  }));
}

function renderHead(el, st) {
  const hd = st.head;
  const kids = [h('h2', {}, 'Head of the queue')];
  if (!hd) {
    kids.push(h('p', { class: 'why idle', id: 'head-why' }, 'Nothing waits: every message is finished.'));
  } else {
    kids.push(h('p', { class: 'why', id: 'head-why' }, srvText(hd.why)));
    kids.push(h('dl', { class: 'kv' },
      h('dt', {}, 'Message'), h('dd', { id: 'head-id' }, msgLink(hd.id), ' ', hd.type_tag || '', ' ', h('span', { class: 'muted' }, hd.identity || '')),
      h('dt', {}, 'State'), h('dd', {}, stateSpan(hd.state), hd.error_class ? ' ' + hd.error_class : '', ` after ${hd.attempts} attempt(s)`),
      hd.last_error ? [h('dt', {}, 'Last error'), h('dd', { class: 'error' }, srvText(hd.last_error))] : null,
      h('dt', {}, 'Received'), h('dd', {}, timeEl(hd.received_at), ' ', h('span', { class: 'muted' }, ago(hd.received_at)))));
    if (can('operator')) kids.push(h('div', { class: 'actions' }, parkButton(hd.id, 'head-park')));
  }
  const halted = st.extra && st.extra.pump_halted;
  if (halted) {
    kids.push(h('p', { class: 'error', id: 'pump-halted' },
      `The pump applies nothing since ${fmtTime(halted.since)}: ${srvText(halted.reason)}. Run REDIS_RESTORE (Jobs) to write FLIGHT_STATE back into Redis; the pump then resumes by itself.`));
  }
  const trouble = st.extra && st.extra.pump_trouble;
  if (trouble) {
    kids.push(h('p', { class: 'error', id: 'pump-trouble' },
      `The pump cannot record the outcome of message ${trouble.msg_id}: ${trouble.failures} failure(s) since ${fmtTime(trouble.since)}, next try ${fmtTime(trouble.next_attempt_at)}: ${srvText(trouble.last_error)}`));
  }
  fill(el, ...kids);
}

function renderPump(el, st) {
  const ex = st.extra || {};
  const pumpPause = st.pump_paused || null;
  const pausedTargets = (st.paused || []).filter(p => p.name.startsWith('target:')).map(p => p.name.slice(7));
  const dispatcher = !st.pump_running ? 'runs with the pump, not here'
    : pausedTargets.length ? 'running; paused for ' + pausedTargets.join(', ') : 'running';
  const kids = [h('h2', {}, 'Pump and dispatcher')];
  const state = pumpPause ? `paused by ${pumpPause.paused_by} since ${fmtTime(pumpPause.paused_at)}` + (pumpPause.reason ? ': ' + pumpPause.reason : '')
    : st.pump_running ? 'running' : 'not running here';
  kids.push(h('dl', { class: 'kv' },
    h('dt', {}, 'Pump'), h('dd', { id: 'pump-state', class: pumpPause ? 'warn' : st.pump_running ? 'ok' : 'warn' }, state),
    st.pump_state && !pumpPause ? [h('dt', {}, 'Detail'), h('dd', {}, srvText(st.pump_state))] : null,
    h('dt', {}, 'Dispatcher'), h('dd', { id: 'dispatcher-state', class: pausedTargets.length ? 'warn' : null }, dispatcher),
    h('dt', {}, 'Lease holder'), h('dd', { id: 'lease-holder' }, st.lease_holder || 'nobody'),
    ex.job ? [h('dt', {}, 'Job in hand'), h('dd', { id: 'job-in-hand' }, `${ex.job.kind} (job ${ex.job.job_id}) for ${ex.job.running_for}: ${srvText(ex.job.doing)}`)] : null,
    ex.in_hand ? [h('dt', {}, 'Message in hand'), h('dd', { id: 'message-in-hand' }, `${ex.in_hand.msg_id} ${ex.in_hand.tag || ''} for ${ex.in_hand.running_for}: ${srvText(ex.in_hand.doing)}`)] : null,
    ex.shadow && ex.shadow.mode === 'shadow' ? [h('dt', {}, 'Mode'), h('dd', { class: 'warn' }, `shadow: adopting above message ${ex.shadow.after_id}, writing no legacy table`)] : null));
  if (can('operator')) {
    kids.push(h('div', { class: 'actions' }, pumpPause
      ? h('button', { id: 'pump-resume', type: 'button', onclick: () => pumpAction('resume') }, 'Resume the pump')
      : h('button', { id: 'pump-pause', type: 'button', onclick: () => pumpAction('pause') }, 'Pause the pump')));
  }
  fill(el, ...kids);
}

// targetPaused returns the target's pause (who, why, since) from the status, or null.
function targetPaused(st, name) {
  return (st.paused || []).find(p => p.name === 'target:' + name) || null;
}

function renderTargets(el, st) {
  const ts = (st.extra && Array.isArray(st.extra.targets)) ? st.extra.targets : [];
  const cols = [
    { head: 'Target', cell: t => link('/events?state=PENDING&target=' + encodeURIComponent(t.target), t.target) },
    { head: 'State', cell: t => { const p = targetPaused(st, t.target); return p ? h('span', { class: 'warn' }, `paused by ${p.paused_by}` + (p.reason ? ': ' + p.reason : '')) : t.blocked_since ? h('span', { class: 'bad' }, 'blocked') : t.rejecting ? h('span', { class: 'bad', title: 'its latest events all went DEAD; none delivered since' }, 'rejecting') : h('span', { class: 'ok' }, 'delivering'); } },
    { head: 'Pending', class: 'num', cell: t => String(t.pending) },
    { head: 'Dead', class: 'num', cell: t => t.dead ? link('/events?state=DEAD&target=' + encodeURIComponent(t.target), String(t.dead)) : '0' },
    { head: 'Sent', class: 'num', cell: t => String(t.sent) },
    { head: 'Oldest pending', cell: t => t.oldest_pending_at ? fmtAge(t.oldest_pending_age_s) : '' },
    { head: 'Blocked since', cell: t => t.blocked_since ? [timeEl(t.blocked_since), h('div', { class: 'error' }, (t.error_class || '') + ' ' + srvText(t.last_error))] : '' },
  ];
  if (can('operator')) {
    cols.push({ head: 'Actions', cell: t => h('span', { class: 'actions' },
      targetPaused(st, t.target)
        ? h('button', { type: 'button', id: 'target-resume-' + t.target, onclick: () => targetAction(t.target, 'resume') }, 'Resume')
        : h('button', { type: 'button', id: 'target-pause-' + t.target, onclick: () => targetAction(t.target, 'pause') }, 'Pause'),
      t.dead ? h('button', { type: 'button', id: 'target-replay-' + t.target, onclick: () => replayDeadEvents(t.target, t.dead) }, 'Replay dead') : null) });
  }
  fill(el, h('h2', {}, 'Delivery targets'), table(cols, ts, { id: 'targets-table', rowId: t => t.target, empty: 'No targets reported.' }));
}

// renderRecent shows the recent problems, kept across restarts: messages parked, dead or
// applied with warnings, and the operators' actions.
function renderRecent(el, st) {
  const rec = (st.extra && Array.isArray(st.extra.recent)) ? st.extra.recent : [];
  fill(el, h('h2', {}, 'Recent problems and operator actions'), table([
    { head: 'At', cell: r => timeEl(r.at) },
    { head: 'What', cell: r => r.kind === 'action' ? `${r.actor || '?'} on ${r.subject || ''}` : [msgLink(r.msg_id), ' ', r.type_tag || ''] },
    { head: 'State', cell: r => r.kind === 'action' ? 'action' : [stateSpan(r.state), r.error_class ? ' ' + r.error_class : ''] },
    { head: 'Note', cell: r => srvText(r.note) },
  ], rec, { id: 'recent-table', rowId: r => r.id, empty: 'No problem recorded.' }));
}

function renderThroughput(el, tp) {
  const per = tp.per_minute || [];
  const W = 600, H = 80, bw = W / Math.max(per.length, 1);
  const top = Math.max(1, ...per);
  const bars = per.map((n, i) => {
    const bh = n ? Math.max(2, Math.round(n / top * (H - 4))) : 0;
    return svg('rect', { x: (i * bw).toFixed(1), y: H - bh, width: Math.max(1, bw - 1).toFixed(1), height: bh }, svg('title', {}, `${60 - i} min ago: ${n}`));
  });
  const chart = svg('svg', { class: 'spark', id: 'throughput-chart', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', 'aria-label': 'messages finished per minute, last hour' },
    svg('line', { x1: 0, y1: H - 0.5, x2: W, y2: H - 0.5, stroke: '#9aa5b1' }), bars);
  fill(el, h('h2', {}, 'Throughput, last hour'), chart,
    h('p', { class: 'muted', id: 'throughput-total' },
      `${tp.total} message(s) finished in the last hour; busiest minute ${top === 1 && !per.some(Boolean) ? 0 : top}.`));
}
