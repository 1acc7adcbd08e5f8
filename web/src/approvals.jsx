import { useEffect, useState } from 'preact/hooks';
import { get, post } from './api.js';
import { Badge, Digest, ErrorNote, Loading, When, useLoad } from './ui.jsx';

const decisions = [
  { value: 'CONFIRM', label: 'Confirm', cls: 'primary', hint: 'run the write as held' },
  { value: 'REJECT', label: 'Reject', cls: 'danger', hint: 'refuse it; the agent is told and may try another way' },
  { value: 'CANCEL', label: 'Cancel', cls: '', hint: 'cancel the task' },
];

// ApprovalCard is one held write: what it would do, and the three answers.
export function ApprovalCard({ approval, onDecided }) {
  const [busy, setBusy] = useState('');
  const [error, setError] = useState(null);
  const [done, setDone] = useState('');
  // Reject and Cancel ask first, with a reason to keep.
  const [asking, setAsking] = useState('');
  const [reason, setReason] = useState('');
  const a = approval;
  const decide = async (d) => {
    setBusy(d);
    setError(null);
    try {
      const body = { decision: d };
      if (d !== 'CONFIRM' && reason.trim()) body.reason = reason.trim();
      await post('/v1/approvals/' + encodeURIComponent(a.id) + '?wait=2s', body);
      setAsking('');
      setDone(d);
      onDecided?.(d);
    } catch (e) {
      setError(e);
    } finally {
      setBusy('');
    }
  };
  // The summary's values come masked where the contract marks them
  // sensitive; the raw arguments are never shown.
  const rows = a.args_summary || [];
  const pending = a.status === 'PENDING' && !done;
  return (
    <article class="card approval" aria-labelledby={'ap-' + a.id} data-approval={a.id}>
      <header>
        <h3 id={'ap-' + a.id}><code>{a.tool}</code> <Badge value={done || a.status} /></h3>
        <span class="muted small">
          session <a href={`#/sessions/${encodeURIComponent(a.session)}/${encodeURIComponent(a.task)}`}><code>{a.session}</code></a>
          {' '}task <code>{a.task}</code> node <code>{a.node}</code> · held <When t={a.created} />
          {a.answered && <> · answered {a.status} <When t={a.answered} /></>}
        </span>
      </header>
      {a.question && <p class="question">{a.question}</p>}
      {rows.length > 0 ? (
        <table class="kv" aria-label="Arguments of the held write">
          <tbody>{rows.map((r) => <tr><th scope="row">{r.label}</th><td><code>{r.value}</code></td></tr>)}</tbody>
        </table>
      ) : <p class="muted small">No argument summary.</p>}
      <p class="muted small">arguments digest <Digest value={a.argsDigest} /></p>
      {pending && !asking && (
        <div class="actions" role="group" aria-label="Decision">
          {decisions.map((d) => (
            <button type="button" class={d.cls} disabled={!!busy} title={d.hint}
              onClick={() => (d.value === 'CONFIRM' ? decide(d.value) : setAsking(d.value))}>
              {busy === d.value ? 'Sending…' : d.label}
            </button>
          ))}
        </div>
      )}
      {pending && asking && (
        <form class="ask" onSubmit={(e) => { e.preventDefault(); decide(asking); }} aria-label={asking === 'REJECT' ? 'Reject the write' : 'Cancel the task'}>
          <label for={'why-' + a.id}>{asking === 'REJECT' ? 'Why reject it? (optional; kept with the approval)' : 'Why cancel the task? (optional; kept with the approval)'}</label>
          <input id={'why-' + a.id} value={reason} maxLength={2000} onInput={(e) => setReason(e.currentTarget.value)} ref={(el) => el && !el.dataset.f && (el.dataset.f = '1', el.focus())} />
          <button type="submit" class={asking === 'REJECT' ? 'danger' : ''} disabled={!!busy}>{busy ? 'Sending…' : asking === 'REJECT' ? 'Yes, reject' : 'Yes, cancel the task'}</button>
          <button type="button" class="ghost" disabled={!!busy} onClick={() => setAsking('')}>Back</button>
        </form>
      )}
      {a.reason && <p class="muted small">reason: {a.reason}</p>}
      {done && <p role="status">Answered {done}.</p>}
      <ErrorNote error={error} />
    </article>
  );
}

const statuses = ['PENDING', 'CONFIRMED', 'REJECTED', 'CANCELLED'];

// POLL is how often the pending approvals are read again (ms).
const POLL = 3000;

// usePending is how many approvals wait for the tenant (null until read),
// read again every few seconds: the navigation's count.
export function usePending(on) {
  const [n, setN] = useState(null);
  useEffect(() => {
    if (!on) return undefined;
    let stop = false;
    const read = async () => {
      if (document.hidden) return;
      try {
        const r = await get('/v1/approvals?status=PENDING&limit=50');
        const n = (r.approvals || []).length;
        if (!stop) setN(r.next ? n + '+' : n);
      } catch {
        // the view that fails shows the error; the count keeps its value
      }
    };
    read();
    const id = setInterval(read, POLL);
    return () => { stop = true; clearInterval(id); };
  }, [on]);
  return n;
}

// Approvals lists held writes, pending first by default, newest first.
export function Approvals() {
  const [status, setStatus] = useState('PENDING');
  const [extra, setExtra] = useState([]);
  const [next, setNext] = useState('');
  const { data, error, loading, reload } = useLoad(async () => {
    const r = await get(`/v1/approvals?status=${status}&limit=50`);
    setExtra([]);
    setNext(r.next || '');
    return r.approvals || [];
  }, [status]);
  const more = async () => {
    const r = await get(`/v1/approvals?status=${status}&limit=50&after=${encodeURIComponent(next)}`);
    setExtra((x) => [...x, ...(r.approvals || [])]);
    setNext(r.next || '');
  };
  // Held writes arrive by themselves: the list is read again every few
  // seconds while the tab is shown.
  useEffect(() => {
    const id = setInterval(() => { if (!document.hidden) reload(); }, POLL);
    return () => clearInterval(id);
  }, [reload]);
  const list = [...(data || []), ...extra];
  return (
    <section aria-labelledby="h-approvals">
      <div class="bar">
        <h1 id="h-approvals">Approvals</h1>
        <label>Status{' '}
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            {statuses.map((s) => <option value={s}>{s}</option>)}
          </select>
        </label>
        <button type="button" onClick={reload}>Refresh</button>
      </div>
      <ErrorNote error={error} />
      <Loading when={loading && !data} />
      {data && !error && list.length === 0 && <p class="muted">No {status.toLowerCase()} approvals.</p>}
      <div class="cards">{list.map((a) => <ApprovalCard key={a.id} approval={a} onDecided={() => setTimeout(reload, 500)} />)}</div>
      {next && <button type="button" onClick={more}>Load more</button>}
    </section>
  );
}

export async function approval(id) {
  return get('/v1/approvals/' + encodeURIComponent(id));
}
