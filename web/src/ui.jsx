import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { lang, t as tr } from './i18n.jsx';

// ErrorNote shows an API error as the API wrote it: its code and message.
export function ErrorNote({ error }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error.code && <code>{error.code}</code>} {error.message}
    </p>
  );
}

const tone = {
  DONE: 'ok', SUCCESS: 'ok', ACTIVE: 'ok', INACTIVE: 'mute', CONFIRM: 'ok', CONFIRMED: 'ok', PASS: 'ok',
  RUNNING: 'run', PLANNED: 'run', RESUME: 'run',
  SUSPENDED: 'wait', PENDING: 'wait', DEFERRED: 'wait', SKIPPED: 'mute',
  FAILED: 'bad', REJECTED: 'bad', REJECT: 'bad', CANCELLED: 'mute', CANCEL: 'mute', STALE: 'mute',
};

// Badge is a status or outcome word with its colour and the word itself, so
// colour is never the only signal.
export function Badge({ value }) {
  if (!value) return null;
  return <span class={'badge ' + (tone[value] || 'mute')}>{value}</span>;
}

export function When({ t }) {
  if (!t) return null;
  const d = new Date(t);
  return <time datetime={t} title={d.toISOString()}>{d.toLocaleString(lang())}</time>;
}

// ago says how long ago t was, in the largest whole unit.
export function ago(t, now = Date.now()) {
  const s = Math.round((now - new Date(t).getTime()) / 1000);
  if (s < 5) return tr('just now');
  if (s < 60) return tr('{n} s ago', { n: s });
  if (s < 3600) return tr('{n} min ago', { n: Math.floor(s / 60) });
  if (s < 86400) return tr('{n} h ago', { n: Math.floor(s / 3600) });
  return tr('{n} d ago', { n: Math.floor(s / 86400) });
}

// Ago is a relative time, its exact time on hover.
export function Ago({ t }) {
  if (!t) return null;
  const d = new Date(t);
  return <time datetime={t} title={d.toLocaleString(lang())}>{ago(t)}</time>;
}

// duration says how long ms milliseconds are.
export function duration(ms) {
  if (ms < 1000) return ms + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(1) + ' s';
  return Math.floor(ms / 60000) + ' min ' + Math.round((ms % 60000) / 1000) + ' s';
}

export function Digest({ value }) {
  if (!value) return null;
  const v = value.replace(/^sha256:/, '');
  return <code class="digest" title={value}>{v.slice(0, 12)}…</code>;
}

// useLoad runs load now and on reload(); it keeps the last data while a
// reload is in flight.
export function useLoad(load, deps) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const reload = useCallback(async () => {
    setState((s) => ({ ...s, loading: true }));
    try {
      const data = await load();
      setState({ data, error: null, loading: false });
    } catch (error) {
      setState((s) => ({ data: s.data, error, loading: false }));
    }
  }, deps);
  useEffect(() => { reload(); }, [reload]);
  return { ...state, reload };
}

export function Loading({ when }) {
  return when ? <p class="muted" aria-live="polite">{tr('Loading…')}</p> : null;
}

// flash carries one note across a navigation: a view that deletes what it
// shows says so on the list it goes back to.
let flash = '';
export function setFlash(note) {
  flash = note;
}
export function takeFlash() {
  const n = flash;
  flash = '';
  return n;
}

// ConfirmDelete is a delete button that asks once more in the page: the
// question takes the focus, Escape or Cancel keeps what it would delete.
export function ConfirmDelete({ label, question, onConfirm }) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const yes = useRef();
  const again = useRef();
  const asked = useRef(false);
  useLayoutEffect(() => {
    if (asking) yes.current?.focus();
    else if (asked.current) again.current?.focus();
    asked.current = asking;
  }, [asking]);
  if (!asking) {
    return <button type="button" class="danger" ref={again} onClick={() => setAsking(true)}>{label}</button>;
  }
  const cancel = () => setAsking(false);
  return (
    <div class="confirm" role="group" aria-label={label} onKeyDown={(e) => { if (e.key === 'Escape') { e.stopPropagation(); cancel(); } }}>
      <span>{question}</span>
      <button type="button" class="danger" ref={yes} disabled={busy} onClick={async () => {
        setBusy(true);
        try {
          await onConfirm();
        } finally {
          setBusy(false);
          setAsking(false);
        }
      }}>{busy ? tr('Deleting…') : tr('Yes, delete')}</button>
      <button type="button" onClick={cancel} disabled={busy}>{tr('Cancel')}</button>
    </div>
  );
}
