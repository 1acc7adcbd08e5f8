import { useCallback, useEffect, useState } from 'preact/hooks';

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
  DONE: 'ok', SUCCESS: 'ok', CONFIRM: 'ok', CONFIRMED: 'ok', PASS: 'ok',
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
  return <time datetime={t} title={d.toISOString()}>{d.toLocaleString()}</time>;
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
  return when ? <p class="muted" aria-live="polite">Loading…</p> : null;
}
