// The operator's actions, each confirmed in the dialog: park, pause and resume the pump or
// a target, replay messages or dead events, acknowledge dead letters.
import { api, describe, routes } from './api.js';
import { flash, h, msgLink, table } from './dom.js';
import { confirmAction } from './modal.js';
import { route } from './router.js';
import { fmtAge } from './time.js';

export function parkButton(id, elid) {
  return h('button', { type: 'button', id: elid || 'park', class: 'danger', onclick: () => parkMessage(id) }, 'Park…');
}

async function parkMessage(id) {
  const done = await confirmAction({
    title: `Park message ${id}`,
    body: ['It goes DEAD with class PARKED and the queue moves on behind it. It stays replayable.'],
    reason: true, confirmText: 'Park',
    act: reason => api(routes.park, { args: { id }, body: { reason } }),
  });
  if (done) { flash(`Message ${id} parked.`); route(); }
}

export async function pumpAction(verb) {
  const pause = verb === 'pause';
  const done = await confirmAction({
    title: pause ? 'Pause the pump' : 'Resume the pump',
    body: [pause ? 'No message is processed until it is resumed; the inbox keeps accepting.' : 'Processing goes on from the head of the queue.'],
    reason: pause, confirmText: pause ? 'Pause' : 'Resume',
    act: reason => api(pause ? routes.pumpPause : routes.pumpResume, { body: pause ? { reason } : {} }),
  });
  if (done) { flash(pause ? 'Pump paused.' : 'Pump resumed.'); route(); }
}

export async function targetAction(name, verb) {
  const pause = verb === 'pause';
  const done = await confirmAction({
    title: `${pause ? 'Pause' : 'Resume'} target ${name}`,
    body: [pause ? `Events for ${name} wait (PENDING) until it is resumed; other targets go on.` : `${name} delivers its waiting events in order.`],
    reason: pause, confirmText: pause ? 'Pause' : 'Resume',
    act: reason => api(pause ? routes.targetPause : routes.targetResume, { args: { name }, body: pause ? { reason } : {} }),
  });
  if (done) { flash(`Target ${name} ${pause ? 'paused' : 'resumed'}.`); route(); }
}

export async function replayDeadEvents(target, count, ids) {
  const req = ids && ids.length ? { target, ids } : { target };
  let preview;
  try {
    preview = await api(routes.eventsReplay, { body: Object.assign({ dry_run: true }, req) });
  } catch (e) {
    preview = { error: describe(e) };
  }
  const body = [preview.error
    ? h('p', { class: 'warn' }, 'No preview: ' + preview.error)
    : h('p', { id: 'events-replay-preview' }, `${preview.moved} DEAD event(s) of ${target} would go back to PENDING` + (preview.skipped ? `, ${preview.skipped} would be left as they are` : '') + '.')];
  body.push(h('p', {}, preview.note || 'Replayed events are delivered after the newer events of this target that were delivered meanwhile: receivers order and deduplicate by event_id.'));
  const done = await confirmAction({
    title: `Replay dead events of ${target}`, body, confirmText: 'Replay',
    act: () => api(routes.eventsReplay, { body: req }),
  });
  if (done) { flash(`Replayed: ${done.moved} moved, ${done.skipped} skipped.`); route(); }
}

// replayMessages previews (dry_run) what would move, then replays on confirmation.
export async function replayMessages(req) {
  let preview;
  try {
    preview = await api(routes.replay, { body: Object.assign({ dry_run: true }, req) });
  } catch (e) {
    preview = { error: describe(e) };
  }
  const body = [];
  if (preview.error) {
    body.push(h('p', { class: 'warn' }, 'No preview: ' + preview.error));
  } else {
    const ids = preview.ids || [];
    body.push(h('p', { id: 'replay-preview' }, `${preview.moved ?? ids.length} message(s) would move back to PENDING` +
      (preview.skipped ? `, ${preview.skipped} would be left as they are` : '') + '.'));
    // What would move, as the CLI's dry run prints it: the first items the API describes.
    const items = preview.items || [];
    if (items.length) {
      body.push(table([
        { head: 'id', cell: it => msgLink(it.id) },
        { head: 'tag', cell: it => it.tag || '-' },
        { head: 'class', cell: it => it.error_class || '-' },
        { head: 'age', cell: it => fmtAge(it.age_seconds) },
      ], items, { id: 'replay-items', rowId: it => it.id }));
      const more = (preview.moved ?? ids.length) - items.length;
      if (more > 0) body.push(h('p', { class: 'muted', id: 'replay-more' }, `… and ${more} more (the table shows the first ${items.length})`));
    }
  }
  body.push(h('p', { class: 'muted' }, 'MALFORMED messages are never replayed.'));
  const what = req.ids ? `message(s) ${req.ids.join(', ')}` : `class(es) ${req.classes.join(', ')}`;
  const done = await confirmAction({
    title: 'Replay ' + what, body, confirmText: 'Replay',
    act: () => api(routes.replay, { body: req }),
  });
  if (done) { flash(`Replayed: ${done.moved} moved, ${done.skipped} skipped.`); route(); }
}

// ackDead asks for a note and acknowledges dead letters of kind ('message' or 'event'):
// kept for audit, no longer counted as waiting for attention.
export async function ackDead(kind, ids, what) {
  const done = await confirmAction({
    title: 'Acknowledge ' + what,
    body: ['An acknowledged dead letter is kept for audit but no longer counted as waiting for attention. Replay still works.',
      kind === 'event' ? 'RETENTION deletes acknowledged dead events after retention.dead-letters.' : ''],
    reason: true, confirmText: 'Acknowledge',
    act: note => api(routes.deadAck, { body: { kind, ids, note } }),
  });
  if (done) { flash(`${done.acked.length} acknowledged` + (done.already.length ? `, ${done.already.length} already were` : '') + '.'); route(); }
}
