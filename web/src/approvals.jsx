import { useEffect, useState } from 'preact/hooks';
import { get, post, tenantEvents } from './api.js';
import { Badge, Digest, ErrorNote, Loading, When, useLoad } from './ui.jsx';
import { t } from './i18n.jsx';

const decisions = [
  { value: 'CONFIRM', label: 'Confirm', cls: 'primary', hint: 'run the write as held' },
  { value: 'REJECT', label: 'Reject', cls: 'danger', hint: 'refuse it; the agent is told and may try another way' },
  { value: 'CANCEL', label: 'Cancel', cls: '', hint: 'cancel the task' },
];

// Answerer names who answered: the key's tenant and fingerprint, and the
// login identity a gateway passed.
export function Answerer({ by }) {
  const p = by.platform ? Object.entries(by.platform).map(([k, v]) => `${k} ${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ') : '';
  return <span class="answerer" data-answered-by={by.tenant}>{p ? p + ' ' + t('via') + ' ' : ''}{t('tenant')} <code>{by.tenant}</code> {t('key')} <code>{by.key}</code></span>;
}

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
          {t('session')} <a href={`#/sessions/${encodeURIComponent(a.session)}/${encodeURIComponent(a.task)}`}><code>{a.session}</code></a>
          {' '}{t('task')} <code>{a.task}</code> {t('node')} <code>{a.node}</code> · {t('held')} <When t={a.created} />
          {a.answered && <> · {t('answered')} {a.status} <When t={a.answered} />{a.answered_by && <> {t('by')} <Answerer by={a.answered_by} /></>}</>}
        </span>
      </header>
      {a.question && <p class="question">{a.question}</p>}
      {rows.length > 0 ? (
        <table class="kv" aria-label={t('Arguments of the held write')}>
          <tbody>{rows.map((r) => <tr><th scope="row">{r.label}</th><td><code>{r.value}</code></td></tr>)}</tbody>
        </table>
      ) : <p class="muted small">{t('No argument summary.')}</p>}
      <p class="muted small">{t('arguments digest')} <Digest value={a.argsDigest} /></p>
      {pending && !asking && (
        <div class="actions" role="group" aria-label={t('Decision')}>
          {decisions.map((d) => (
            <button type="button" class={d.cls} disabled={!!busy} title={t(d.hint)}
              onClick={() => (d.value === 'CONFIRM' ? decide(d.value) : setAsking(d.value))}>
              {busy === d.value ? t('Sending…') : t(d.label)}
            </button>
          ))}
        </div>
      )}
      {pending && asking && (
        <form class="ask" onSubmit={(e) => { e.preventDefault(); decide(asking); }} aria-label={asking === 'REJECT' ? 'Reject the write' : 'Cancel the task'}>
          <label for={'why-' + a.id}>{asking === 'REJECT' ? t('Why reject it? (optional; kept with the approval)') : t('Why cancel the task? (optional; kept with the approval)')}</label>
          <input id={'why-' + a.id} value={reason} maxLength={2000} onInput={(e) => setReason(e.currentTarget.value)} ref={(el) => el && !el.dataset.f && (el.dataset.f = '1', el.focus())} />
          <button type="submit" class={asking === 'REJECT' ? 'danger' : ''} disabled={!!busy}>{busy ? t('Sending…') : asking === 'REJECT' ? t('Yes, reject') : t('Yes, cancel the task')}</button>
          <button type="button" class="ghost" disabled={!!busy} onClick={() => setAsking('')}>{t('Back')}</button>
        </form>
      )}
      {a.reason && <p class="muted small">{t('reason')}: {a.reason}</p>}
      {done && <p role="status">{t('Answered')} {done}.</p>}
      <ErrorNote error={error} />
    </article>
  );
}

const statuses = ['PENDING', 'CONFIRMED', 'REJECTED', 'CANCELLED'];

// POLL is how often the pending approvals are read again (ms) while the
// tenant's event stream is down: the fallback.
const POLL = 3000;

// live is the tenant's approvals as its event stream (GET /v1/events)
// gives them, shared by the navigation's count and the Approvals view:
// one stream per tab, opened by the first view that listens.
const live = { map: new Map(), asks: new Map(), synced: false, state: 'connecting', version: 0, subs: new Set(), stop: null };

function changed() {
  live.version++;
  for (const f of live.subs) f(live.version);
}

function listen(f) {
  live.subs.add(f);
  if (!live.stop) {
    live.map = new Map();
    live.asks = new Map();
    live.synced = false;
    live.state = 'connecting';
    live.stop = tenantEvents({
      onEvent: (d, kind) => {
        if (kind === 'approval' && d && d.id) live.map.set(d.id, d);
        else if (kind === 'followup' && d && d.session) {
          const k = d.session + '/' + d.task;
          if (d.status === 'WAITING') live.asks.set(k, d);
          else live.asks.delete(k);
        } else if (kind === 'synced') live.synced = true;
        else return;
        changed();
      },
      onState: (st) => {
        live.state = typeof st === 'string' ? st : 'down';
        if (st !== 'live') live.synced = false;
        // A stream opened again sends every follow-up still waiting.
        if (st === 'live') live.asks = new Map();
        changed();
      },
    });
  }
  return () => {
    live.subs.delete(f);
    if (live.subs.size === 0 && live.stop) {
      live.stop();
      live.stop = null;
    }
  };
}

// useLive follows the tenant's stream while on: the pending approvals
// (newest first) once the stream is synced, and whether it is down (the
// views then read the list every few seconds instead).
function useLive(on) {
  const [, setV] = useState(0);
  useEffect(() => (on ? listen(setV) : undefined), [on]);
  const pending = [...live.map.values()].filter((a) => a.status === 'PENDING')
    .sort((a, b) => (b.created > a.created ? 1 : b.created < a.created ? -1 : b.id > a.id ? 1 : -1));
  const down = on && live.state !== 'live' && live.state !== 'connecting';
  return { pending, asks: [...live.asks.values()], synced: on && live.synced, down, version: live.version };
}

// usePending is how many approvals wait for the tenant (null until
// known): the navigation's count, from the event stream; read from the
// list every few seconds only while the stream is down.
export function usePending(on) {
  const { pending, synced, down } = useLive(on);
  const [polled, setPolled] = useState(null);
  useEffect(() => {
    if (!down) return undefined;
    let stop = false;
    const read = async () => {
      if (document.hidden) return;
      try {
        const r = await get('/v1/approvals?status=PENDING&limit=50');
        const n = (r.approvals || []).length;
        if (!stop) setPolled(r.next ? n + '+' : n);
      } catch {
        // the view that fails shows the error; the count keeps its value
      }
    };
    read();
    const id = setInterval(read, POLL);
    return () => { stop = true; clearInterval(id); };
  }, [down]);
  if (synced) return pending.length;
  return down ? polled : null;
}

// Approvals lists held writes, pending first by default, newest first. The
// pending ones come from the tenant's event stream as they are held and
// answered; the others are read from the list when chosen, and again when
// the stream says an approval changed.
export function Approvals() {
  const [status, setStatus] = useState('PENDING');
  const [extra, setExtra] = useState([]);
  const [next, setNext] = useState('');
  const stream = useLive(true);
  const fromStream = status === 'PENDING' && !stream.down;
  const { data, error, loading, reload } = useLoad(async () => {
    if (fromStream) return null;
    const r = await get(`/v1/approvals?status=${status}&limit=50`);
    setExtra([]);
    setNext(r.next || '');
    return r.approvals || [];
  }, [status, fromStream]);
  const more = async () => {
    const r = await get(`/v1/approvals?status=${status}&limit=50&after=${encodeURIComponent(next)}`);
    setExtra((x) => [...x, ...(r.approvals || [])]);
    setNext(r.next || '');
  };
  // A decided or new approval changes the other lists: read them again.
  useEffect(() => {
    if (!fromStream && !stream.down && stream.version > 0) reload();
  }, [stream.synced && stream.version]);
  // The fallback: while the stream is down, the list is read again every
  // few seconds.
  useEffect(() => {
    if (!stream.down) return undefined;
    const id = setInterval(() => { if (!document.hidden) reload(); }, POLL);
    return () => clearInterval(id);
  }, [reload, stream.down]);
  const list = fromStream ? stream.pending : [...(data || []), ...extra];
  const ready = fromStream ? stream.synced : data && !error;
  return (
    <section aria-labelledby="h-approvals">
      <div class="bar">
        <h1 id="h-approvals">{t('Approvals')}</h1>
        <label for="ap-status">{t('Status')}</label>
        <select id="ap-status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
          {statuses.map((s) => <option value={s}>{s}</option>)}
        </select>
        {!fromStream && <button type="button" onClick={reload}>{t('Refresh')}</button>}
        <span class="muted small" role="status" data-stream={stream.down ? 'down' : stream.synced ? 'live' : 'connecting'}>
          {stream.down ? t('live updates down: reading every 3 s') : stream.synced ? t('● live') : t('connecting…')}
        </span>
      </div>
      {!fromStream && <ErrorNote error={error} />}
      <Loading when={fromStream ? !stream.synced : loading && !data} />
      {ready && list.length === 0 && <p class="muted">{t(`No ${status.toLowerCase()} approvals.`)}</p>}
      {stream.synced && stream.asks.length > 0 && (
        <div class="asks" aria-labelledby="h-asks">
          <h2 id="h-asks">{t('Waiting for an answer')} <span class="count" data-asks={stream.asks.length}>{stream.asks.length}</span></h2>
          <ul>{stream.asks.map((f) => (
            <li data-ask={f.session + '/' + f.task}>
              <a href={`#/sessions/${encodeURIComponent(f.session)}/${encodeURIComponent(f.task)}`}>{t('session')} <code>{f.session}</code> {t('task')} <code>{f.task}</code></a>
            </li>
          ))}</ul>
        </div>
      )}
      <div class="cards">{list.map((a) => <ApprovalCard key={a.id} approval={a} onDecided={() => { if (!fromStream) setTimeout(reload, 500); }} />)}</div>
      {!fromStream && next && <button type="button" onClick={more}>{t('Load more')}</button>}
    </section>
  );
}

export async function approval(id) {
  return get('/v1/approvals/' + encodeURIComponent(id));
}
