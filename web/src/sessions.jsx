import { useEffect, useRef, useState } from 'preact/hooks';
import { get, post } from './api.js';
import { Ago, Badge, ErrorNote, Loading, When } from './ui.jsx';
import { t as tr } from './i18n.jsx';

const PAGE = 20;

// Sessions lists the tenant's sessions newest first, a page at a time, and
// searches the pages loaded by id or by the text of their tasks.
// filters are what the store filters sessions by: their latest task's
// status.
const filters = [
  { value: '', label: 'Any status' },
  { value: 'FAILED', label: 'Failed' },
  { value: 'SUSPENDED', label: 'Waiting (approval, answer, verification)' },
  { value: 'RUNNING', label: 'Running' },
  { value: 'DONE', label: 'Done' },
  { value: 'CANCELLED', label: 'Cancelled' },
  { value: 'NONE', label: 'No task yet' },
];

const spans = [
  { value: '', label: 'Any time' },
  { value: '3600', label: 'Last hour' },
  { value: '86400', label: 'Last 24 hours' },
  { value: '604800', label: 'Last 7 days' },
];

// With admin, it is the platform's view: every tenant's sessions, each
// naming its tenant (GET /admin/v1/sessions), without search or links, as
// an admin key reads no tenant's session.
export function Sessions({ admin = false }) {
  const [status, setStatus] = useState(new URLSearchParams(location.hash.split('?')[1] || '').get('status') || '');
  const [span, setSpan] = useState('');
  const [rows, setRows] = useState([]);
  const [next, setNext] = useState('');
  const [details, setDetails] = useState({});
  const [q, setQ] = useState('');
  const [error, setError] = useState(null);
  const [loading, setLoading] = useState(true);

  // Only the answer to the latest request counts: a page asked before
  // the filter changed is dropped.
  const asked = useRef(0);
  const page = async (after) => {
    const n = ++asked.current;
    setLoading(true);
    try {
      let path = (admin ? '/admin/v1/sessions' : '/v1/sessions') + `?limit=${PAGE}` + (after ? '&after=' + encodeURIComponent(after) : '');
      if (status) path += '&status=' + status;
      if (span) path += '&since=' + encodeURIComponent(new Date(Date.now() - span * 1000).toISOString().replace(/\.\d+Z$/, 'Z'));
      const r = await get(path);
      if (n !== asked.current) return;
      setRows((old) => (after ? [...old, ...r.sessions] : r.sessions));
      setNext(r.next || '');
      setError(null);
    } catch (e) {
      if (n === asked.current) setError(e);
    } finally {
      if (n === asked.current) setLoading(false);
    }
  };
  useEffect(() => { setRows([]); page(''); }, [status, span]);

  // A search by text reads each loaded session's tasks. Reading a session
  // opens it on this instance (it claims it from the directory), so the
  // list does so only when asked: two at a time, waiting out a 429, as the
  // tenant's request rate covers the console too.
  const searching = q.trim().length > 0;
  useEffect(() => {
    if (!searching || admin) return undefined;
    let stop = false;
    const todo = rows.filter((s) => !details[s.id]).map((s) => s.id);
    const worker = async () => {
      while (!stop && todo.length) {
        const id = todo.shift();
        for (let attempt = 0; attempt < 4 && !stop; attempt++) {
          try {
            const d = await get('/v1/sessions/' + encodeURIComponent(id));
            setDetails((m) => ({ ...m, [id]: d }));
            break;
          } catch (e) {
            if (e.status !== 429) {
              setDetails((m) => ({ ...m, [id]: { tasks: [] } }));
              break;
            }
            await new Promise((r) => setTimeout(r, 1000));
          }
        }
      }
    };
    worker();
    worker();
    return () => { stop = true; };
  }, [rows, searching]);

  const create = async () => {
    try {
      const s = await post('/v1/sessions', {});
      location.hash = '#/sessions/' + encodeURIComponent(s.id);
    } catch (e) {
      setError(e);
    }
  };

  const needle = q.trim().toLowerCase();
  const shown = rows.filter((s) => {
    if (!needle) return true;
    if (s.id.toLowerCase().includes(needle)) return true;
    const tasks = details[s.id]?.tasks || [];
    return tasks.some((t) => [t.objective, t.output, t.reply, t.reason].some((x) => x && x.toLowerCase().includes(needle)));
  });

  return (
    <section aria-labelledby="h-sessions">
      <div class="bar">
        <h1 id="h-sessions">{tr('Sessions')}</h1>
        {!admin && <form role="search" onSubmit={(e) => e.preventDefault()}>
          <label for="q" class="sr">{tr('Search sessions by id or text')}</label>
          <input id="q" data-search type="search" placeholder={tr('Search by id or text  ( / )')} value={q}
            onInput={(e) => setQ(e.currentTarget.value)} />
        </form>}
        <label>{tr('Status')}{' '}
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            {filters.map((f) => <option value={f.value}>{tr(f.label)}</option>)}
          </select>
        </label>
        <label>{tr('Created')}{' '}
          <select value={span} onChange={(e) => setSpan(e.currentTarget.value)}>
            {spans.map((f) => <option value={f.value}>{tr(f.label)}</option>)}
          </select>
        </label>
        <button type="button" onClick={() => page('')}>{tr('Refresh')}</button>
        {!admin && <button type="button" onClick={create}>{tr('New session')}</button>}
      </div>
      <ErrorNote error={error} />
      {!admin && <p class="muted small">{tr('A search matches session ids, and the text of the tasks of the sessions listed (which it reads).')}</p>}
      {admin && <p class="muted small">{tr("Every tenant's sessions. An admin key reads no tenant's session: open one with its tenant's key.")}</p>}
      <div class="scroll">
      <table class="list sessions">
        <caption class="sr">{tr(admin ? "Every tenant's sessions, newest first" : "The tenant's sessions, newest first")}</caption>
        <thead><tr><th scope="col">{tr('Session')}</th>{admin && <th scope="col">{tr('Tenant')}</th>}<th scope="col">{tr('Latest task')}</th><th scope="col">{tr('Tasks')}</th><th scope="col">{tr('Last activity')}</th><th scope="col">{tr('Created')}</th></tr></thead>
        <tbody>
          {shown.map((s) => {
            const tasks = details[s.id]?.tasks || [];
            const last = tasks[tasks.length - 1];
            return (
              <tr data-session={s.id} data-status={s.status || 'NONE'}>
                <td>{admin ? <code>{s.id}</code> : <a href={'#/sessions/' + encodeURIComponent(s.id) + (s.latest ? '/' + encodeURIComponent(s.latest) : '')}><code>{s.id}</code></a>}</td>
                {admin && <td>{s.tenant}</td>}
                <td>{s.status ? <><Badge value={s.status} /> <code>{s.latest}</code></> : <span class="muted">{tr('none')}</span>}
                  {last && <div class="objective small">{last.objective}</div>}</td>
                <td class="num">{s.tasks ?? '—'}</td>
                <td>{s.last ? <Ago t={s.last} /> : <span class="muted">—</span>}</td>
                <td><When t={s.created} /></td>
              </tr>
            );
          })}
        </tbody>
      </table>
      </div>
      {!loading && !error && shown.length === 0 && <p class="muted">{tr(rows.length ? 'No session loaded matches.' : status || span ? 'No session matches the filter.' : 'No sessions yet.')}</p>}
      <Loading when={loading} />
      {next && <button type="button" onClick={() => page(next)} disabled={loading}>{tr('Load more')}</button>}
    </section>
  );
}
