// #/jobs and #/jobs/ID: the pump jobs and their progress; an admin starts one here.
import { APIError, api, describe, routes, url } from '../api.js';
import { fill, flash, h, msgLink, stateSpan, table, timeEl } from '../dom.js';
import { followList, listSince, liveTable } from '../live.js';
import { confirmAction } from '../modal.js';
import { alive } from '../router.js';
import { can } from '../session.js';
import { fmtAge, srvText } from '../time.js';

// JOB_KINDS are the jobs an admin may start, with what each does (README "Retention and
// scheduled jobs").
const JOB_KINDS = {
  ARCHIVE: 'ARCHIVE moves SUCCEEDED and SKIPPED messages processed more than a day ago to CMINMSGS_HST.',
  HISTORY_SWEEP: 'HISTORY_SWEEP writes the flights of days older than history.keep-days to the history store and deletes from the flight store only those written.',
  RETENTION: 'RETENTION deletes SENT events and archived finished messages older than retention.events and retention.archive.',
  PROJECTION_REBUILD: 'PROJECTION_REBUILD rebuilds the store that is not authoritative from the one that is (phase A: FLIGHT_STATE from Redis; rows Redis lacks are kept unless the parameters say prune).',
  CONSISTENCY_CHECK: 'CONSISTENCY_CHECK compares a sample of the flights of Redis and FLIGHT_STATE.',
  REDIS_RESTORE: 'REDIS_RESTORE writes FLIGHT_STATE back into Redis (phase A): everything, with new marks, or one flight (flid=N) or day (day=YYYY-MM-DD). A pump stopped because Redis lost its data runs it at once and resumes.',
};

// jobActive says whether a job is still to finish (queued, retried or running).
const jobActive = j => j.progress || j.state === 'PENDING' || j.state === 'FAILED';

// jobProgress is what a job is doing while it runs, else its result or last error.
function jobProgress(j) {
  if (j.progress) return h('span', { class: 'warn job-doing' }, `running ${fmtAge(j.progress.running_seconds)}: ${srvText(j.progress.doing)}`);
  return [srvText(j.result), j.last_error ? h('div', { class: 'error' }, srvText(j.last_error)) : null];
}

// views.jobs lists the jobs (every role), following the jobs stream (new jobs behind the
// "N new" bar, progress in place), and, at #/jobs/ID, one job, read again every 2 s while it
// is still to finish. An admin also gets the form that starts one.
export const jobsView = async ({ arg, gen, view }) => {
  const kids = [h('h1', {}, arg ? 'Job ' + arg : 'Jobs')];
  if (!arg && can('admin')) kids.push(await jobForm());
  if (!alive(gen)) return;
  const box = h('div', { id: arg ? 'job-detail' : 'jobs-list' });
  kids.push(box);
  fill(view, ...kids);
  const cols = [
    { head: 'Id', cell: j => h('a', { href: '#/jobs/' + j.id }, String(j.id)) }, { head: 'Kind', cell: j => j.kind },
    { head: 'State', cell: j => j.progress ? h('span', { class: 'warn' }, 'RUNNING') : stateSpan(j.state) },
    { head: 'Attempts', class: 'num', cell: j => String(j.attempts) },
    { head: 'After message', cell: j => j.after_msg_id ? msgLink(j.after_msg_id) : '' },
    { head: 'Created', cell: j => timeEl(j.created_at) }, { head: 'Finished', cell: j => timeEl(j.finished_at) },
    { head: 'Progress / result / error', cell: jobProgress },
  ];
  const opts = { id: 'jobs-table', rowId: j => j.id, empty: 'No job yet.' };
  const refresh = async () => {
    if (!alive(gen)) return;
    let list;
    try {
      list = arg ? [await api(routes.job, { args: { id: arg } })] : ((await api(routes.jobs)).jobs || []);
    } catch (e) {
      if (alive(gen)) fill(box, h('p', { class: 'error', id: 'jobs-error' }, describe(e)));
      return;
    }
    if (!alive(gen)) return;
    if (!arg) {
      const lt = liveTable(cols, list, opts);
      box.before(...followList({ gen, url: url(routes.jobsStream, {}, { after: listSince(list, j => j.id, {}) }), list: lt, what: 'job', name: 'jobs' }));
      fill(box, lt.el);
      return;
    }
    if (list.some(jobActive)) setTimeout(refresh, 2000);
    fill(box, table(cols, list, opts));
  };
  await refresh();
};

// jobForm is an admin's form to start a job: the kinds this server can run (GET
// /api/v1/jobs/kinds), and those it cannot shown disabled with the reason (PROJECTION_REBUILD
// in phase B without a REDIS_FLIGHT target would go DEAD at once). A server without the
// route has every kind offered, saying it cannot tell.
async function jobForm() {
  let kinds, unknown = '';
  try {
    kinds = (await api(routes.jobKinds)).kinds;
    if (!Array.isArray(kinds)) throw new APIError(200, url(routes.jobKinds) + ': invalid answer (no kinds)', 'invalid_answer', url(routes.jobKinds));
  } catch (e) {
    kinds = Object.keys(JOB_KINDS).map(k => ({ kind: k, runnable: true }));
    unknown = 'This server does not say which jobs can run here (' + describe(e) + '): every kind is offered.';
  }
  const info = Object.fromEntries(kinds.map(k => [k.kind, k]));
  const firstRunnable = (kinds.find(k => k.runnable) || {}).kind;
  const kind = h('select', { id: 'job-kind' }, kinds.map(k => h('option', {
    value: k.kind, disabled: !k.runnable, selected: k.kind === firstRunnable,
    title: k.runnable ? JOB_KINDS[k.kind] || '' : 'cannot run here: ' + (k.reason || 'no reason given'),
  }, k.kind + (k.runnable ? '' : ' (cannot run here)'))));
  const params = h('input', { id: 'job-params', type: 'text', placeholder: 'prune, flid=N, day=YYYY-MM-DD', size: 28 });
  const start = h('button', { type: 'button', id: 'job-start', disabled: !firstRunnable, onclick: async () => {
    const k = info[kind.value];
    if (!k || !k.runnable) return;
    const p = params.value.trim();
    const done = await confirmAction({
      title: 'Start a ' + k.kind + ' job' + (p ? ' (' + p + ')' : ''),
      body: [JOB_KINDS[k.kind] || k.kind, 'It runs in the message order, after every message accepted so far.'],
      confirmText: 'Start', act: () => api(routes.jobStart, { body: p ? { kind: k.kind, params: p } : { kind: k.kind } }),
    });
    if (done) { flash(`Job ${done.id} queued.`); location.hash = '#/jobs/' + done.id; }
  } }, 'Start…');
  kind.addEventListener('change', () => { start.disabled = !(info[kind.value] || {}).runnable; });
  const list = table([
    { head: 'Kind', cell: k => k.kind },
    { head: 'Here', cell: k => k.runnable ? h('span', { class: 'ok' }, 'can run') : h('span', { class: 'muted job-reason' }, 'cannot run: ' + (k.reason || 'no reason given')) },
    { head: 'What it does', cell: k => JOB_KINDS[k.kind] || '' },
  ], kinds, { id: 'job-kinds', rowId: k => k.kind, rowClass: k => k.runnable ? null : 'disabled' });
  return h('section', { class: 'card', id: 'job-form' }, h('h2', {}, 'Start a job'),
    h('div', { class: 'actions' }, h('label', {}, 'Kind ', kind), h('label', {}, ' Parameters ', params), start),
    unknown ? h('p', { class: 'warn', id: 'job-kinds-unknown' }, unknown) : null,
    h('details', { open: kinds.some(k => !k.runnable) || null }, h('summary', {}, 'Job kinds and whether they can run here'), list));
}
