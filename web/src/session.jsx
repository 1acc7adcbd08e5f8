import { useEffect, useRef, useState } from 'preact/hooks';
import { events as follow, get, post } from './api.js';
import { approval as getApproval, ApprovalCard } from './approvals.jsx';
import { TaskGraph } from './graph.jsx';
import { Badge, ErrorNote, When } from './ui.jsx';

const enc = encodeURIComponent;

// Session is one session: its tasks, a message box, and the selected
// task's graph, live trace and whatever the task waits for.
export function Session({ id, task }) {
  const [info, setInfo] = useState(null);
  const [error, setError] = useState(null);
  const [evs, setEvs] = useState([]);
  const [live, setLive] = useState('connecting');
  const timer = useRef(0);

  const load = async () => {
    try {
      setInfo(await get('/v1/sessions/' + enc(id)));
      setError(null);
    } catch (e) {
      setError(e);
    }
  };
  useEffect(() => {
    setInfo(null);
    setEvs([]);
    load();
    const stop = follow(id, {
      onEvent: (e) => {
        setEvs((old) => (old.length && old[old.length - 1].seq >= e.seq ? old : [...old, e]));
        // A task's status lives in the session: reload it (at most a few
        // times a second) when an event can have changed one.
        if (e.kind === 'TASK' || e.kind === 'SUSPEND' || e.kind === 'RESUME' || e.kind === 'NODE') {
          clearTimeout(timer.current);
          timer.current = setTimeout(load, 150);
        }
      },
      onState: (s) => setLive(typeof s === 'string' ? s : 'error: ' + s.message),
    });
    return () => { stop(); clearTimeout(timer.current); };
  }, [id]);

  const tasks = info?.tasks || [];
  const current = tasks.find((t) => t.id === task) || tasks[tasks.length - 1];
  return (
    <section aria-labelledby="h-session">
      <div class="bar">
        <h1 id="h-session">Session <code>{id}</code></h1>
        <span class={'live ' + (live === 'live' ? 'on' : 'off')} role="status" aria-live="polite">
          {live === 'live' ? '● live' : live}
        </span>
        {info && <span class="muted small">opened <When t={info.created} /></span>}
      </div>
      <ErrorNote error={error} />
      <Compose id={id} onSent={(t) => { load(); if (t) location.hash = `#/sessions/${enc(id)}/${enc(t)}`; }} />
      <div class="split">
        <nav aria-label="Tasks" class="tasks">
          <h2>Tasks</h2>
          {tasks.length === 0 && <p class="muted">No tasks yet: send a message.</p>}
          <ol>
            {tasks.map((t) => (
              <li>
                <a href={`#/sessions/${enc(id)}/${enc(t.id)}`} aria-current={current?.id === t.id ? 'true' : undefined}>
                  <code>{t.id}</code> <Badge value={t.status} />
                  <span class="objective">{t.objective}</span>
                </a>
              </li>
            ))}
          </ol>
        </nav>
        <div class="task">
          {current && <Task session={id} task={current} events={evs.filter((e) => e.task === current.id)} onChange={load} />}
        </div>
      </div>
    </section>
  );
}

function Compose({ id, onSent }) {
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const send = async (e) => {
    e.preventDefault();
    if (!text.trim()) return;
    setBusy(true);
    setError(null);
    try {
      const r = await post(`/v1/sessions/${enc(id)}/messages`, { text });
      setText('');
      onSent(r?.task?.id);
    } catch (e2) {
      setError(e2);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="compose" onSubmit={send} aria-label="Send a message">
      <label for="msg">Message</label>
      <input id="msg" value={text} onInput={(e) => setText(e.currentTarget.value)} placeholder="What should the agent do?" autocomplete="off" />
      <button type="submit" disabled={busy || !text.trim()}>{busy ? 'Sending…' : 'Send'}</button>
      <ErrorNote error={error} />
    </form>
  );
}

function Task({ session, task, events, onChange }) {
  const s = task.suspension;
  return (
    <article aria-labelledby="h-task">
      <h2 id="h-task">Task <code>{task.id}</code> <Badge value={task.status} /></h2>
      <p class="objective">{task.objective}</p>
      {task.output && <p><strong>Output:</strong> {task.output}</p>}
      {task.reply && <p><strong>Reply:</strong> {task.reply}</p>}
      {task.reason && <p><strong>Reason:</strong> {task.reason}</p>}
      {task.status === 'SUSPENDED' && s && <Waiting session={session} task={task} onChange={onChange} />}
      <h3>Graph</h3>
      <TaskGraph events={events} task={task.id} />
      <h3>Trace</h3>
      <Trace events={events} />
    </article>
  );
}

// Waiting is what a suspended task asks: an approval, a follow-up answer or
// a verification.
function Waiting({ session, task, onChange }) {
  const s = task.suspension;
  const [ap, setAp] = useState(null);
  const [answer, setAnswer] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  useEffect(() => {
    setAp(null);
    if (s.kind === 'APPROVAL' && task.approval) getApproval(task.approval).then(setAp, setError);
  }, [task.approval, s.kind]);
  const send = async (path, body) => {
    setBusy(true);
    setError(null);
    try {
      await post(`/v1/sessions/${enc(session)}/tasks/${enc(task.id)}/${path}?wait=2s`, body);
      setAnswer('');
      onChange();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="card waiting" aria-labelledby="h-wait">
      <h3 id="h-wait">Waiting for {s.kind === 'FOLLOW_UP' ? 'an answer' : s.kind === 'VERIFY' ? 'verification' : 'approval'}</h3>
      {s.kind !== 'APPROVAL' && s.question && <p class="question">{s.question}</p>}
      {s.kind === 'APPROVAL' && ap && <ApprovalCard approval={ap} onDecided={onChange} />}
      {s.kind === 'FOLLOW_UP' && (
        <form onSubmit={(e) => { e.preventDefault(); send('follow-up', { answer }); }} aria-label="Answer the follow-up question">
          <label for="answer">Answer</label>
          {s.suggestions?.length > 0 && (
            <div class="suggest">{s.suggestions.map((x) => <button type="button" class="ghost" onClick={() => setAnswer(x)}>{x}</button>)}</div>
          )}
          <input id="answer" value={answer} onInput={(e) => setAnswer(e.currentTarget.value)} autocomplete="off" />
          <button type="submit" disabled={busy || !answer.trim()}>Answer</button>
        </form>
      )}
      {s.kind === 'VERIFY' && (
        <div class="actions" role="group" aria-label="Verification">
          <p class="muted small">Did <code>{s.tool}</code> take effect? Check with its verify tool, or say what you saw.</p>
          <button type="button" class="primary" disabled={busy} onClick={() => send('verify', {})}>Check with the verify tool</button>
          <button type="button" disabled={busy} onClick={() => send('verify', { took: true })}>It was done</button>
          <button type="button" disabled={busy} onClick={() => send('verify', { took: false })}>It was not done</button>
        </div>
      )}
      <ErrorNote error={error} />
    </section>
  );
}

// Trace is the task's events as they arrive: each tool call with its
// outcome, code, message and evidence.
function Trace({ events }) {
  const shown = events.filter((e) => e.kind !== 'MODEL');
  const tokens = events.filter((e) => e.kind === 'MODEL').reduce((n, e) => n + (e.promptTokens || 0) + (e.completionTokens || 0), 0);
  if (!shown.length) return <p class="muted">No events yet.</p>;
  return (
    <>
      <table class="trace" aria-live="polite">
        <caption class="sr">Trace events, oldest first</caption>
        <thead><tr><th scope="col">#</th><th scope="col">Event</th><th scope="col">Node</th><th scope="col">Tool</th><th scope="col">Outcome</th><th scope="col">Code</th><th scope="col">Message</th><th scope="col">Evidence</th></tr></thead>
        <tbody>
          {shown.map((e) => (
            <tr class={'k-' + e.kind + (e.level === 'WARN' ? ' warn' : '')} data-seq={e.seq} data-kind={e.kind} data-tool={e.tool || ''}>
              <td class="num">{e.seq}</td>
              <td>{e.kind}{e.status && (e.kind !== 'TOOL' || e.status === 'SKIPPED') && <> <Badge value={e.status} /></>}</td>
              <td><code>{(e.node || '').replace(/^t\d+\./, '')}</code></td>
              <td>{e.tool && <code title={e.label || ''}>{e.tool}</code>}{e.label && <div class="muted small">{e.label}</div>}</td>
              <td><Badge value={e.outcome} /></td>
              <td>{e.name && <code title={e.code}>{e.name}</code>}{e.category && <div class="muted small">{e.category}</div>}</td>
              <td class="msg">
                {e.message}
                {(e.input || e.sent) && (
                  <details>
                    <summary>call</summary>
                    {e.input && <><div class="muted small">arguments</div><pre>{e.input}</pre></>}
                    {e.sent && <><div class="muted small">sent to the model</div><pre>{e.sent}</pre></>}
                  </details>
                )}
              </td>
              <td>{e.evidence && <code>{e.evidence}</code>}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {tokens > 0 && <p class="muted small">model tokens: {tokens}</p>}
    </>
  );
}
