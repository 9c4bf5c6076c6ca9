// The confirmation dialog every action goes through.
import { describe } from './api.js';
import { h } from './dom.js';

// confirmAction shows the modal with body (nodes); on Confirm it runs act(reason) and closes
// when it succeeds, or shows its error and stays open. It resolves to act's result or null.
export function confirmAction({ title, body, reason, confirmText, act }) {
  const modal = document.getElementById('modal');
  const reasonLabel = document.getElementById('modal-reason-label');
  const reasonInput = document.getElementById('modal-reason');
  const err = document.getElementById('modal-error');
  const ok = document.getElementById('modal-confirm');
  const cancel = document.getElementById('modal-cancel');
  document.getElementById('modal-title').textContent = title;
  document.getElementById('modal-body').replaceChildren(...[].concat(body || []).map(b => b instanceof Node ? b : h('p', {}, b)));
  reasonLabel.hidden = !reason;
  reasonInput.value = '';
  err.hidden = true;
  ok.textContent = confirmText || 'Confirm';
  ok.disabled = false;
  modal.hidden = false;
  (reason ? reasonInput : ok).focus();
  return new Promise(resolve => {
    const close = v => {
      modal.hidden = true;
      ok.onclick = cancel.onclick = null;
      resolve(v);
    };
    cancel.onclick = () => close(null);
    ok.onclick = async () => {
      const why = reasonInput.value.trim();
      if (reason && !why) {
        err.textContent = 'Give a reason: it is kept with the message and in the audit log.';
        err.hidden = false;
        return;
      }
      ok.disabled = true;
      try {
        const res = await act(why);
        close(res === undefined ? true : res);
      } catch (e) {
        err.textContent = describe(e);
        err.hidden = false;
        ok.disabled = false;
      }
    };
  });
}
