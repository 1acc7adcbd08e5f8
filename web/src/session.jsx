import { useEffect, useRef, useState } from 'preact/hooks';
import { events as follow, get, post } from './api.js';
import { approval as getApproval, ApprovalCard } from './approvals.jsx';
import { TaskGraph } from './graph.jsx';
import { Ago, Badge, ErrorNote, When, duration } from './ui.jsx';
import { lang, t as tr } from './i18n.jsx';

const enc = encodeURIComponent;

// Session is one session: its tasks, a message box, and the selected
// task's graph, live trace and whatever the task waits for.
export function Session({ id, task }) {
  const [info, setInfo] = useState(null);
  const [error, setError] = useState(null);
  const [evs, setEvs] = useState([]);
  const [live, setLive] = useState('connecting');
  const timer = useRef(0);

  // The view may move to another session while a read is in flight: only
  // the shown session's answers count.
  const shown = useRef(id);
  shown.current = id;
  const seen = useRef([]);
  const load = async () => {
    const of = id;
    try {
      const got = await get('/v1/sessions/' + enc(of));
      if (shown.current !== of) return;
      setInfo(got);
      setError(null);
      // A task shows RUNNING until its run has freed the session, which
      // can be after the task's final event arrived: read it again until
      // it shows how it ended.
      if ((got?.tasks || []).some((t) => t.status === 'RUNNING' && settled(seen.current, t.id))) {
        clearTimeout(timer.current);
        timer.current = setTimeout(load, 250);
      }
    } catch (e) {
      if (shown.current === of) setError(e);
    }
  };
  useEffect(() => {
    setInfo(null);
    setError(null);
    setEvs([]);
    seen.current = [];
    load();
    const stop = follow(id, {
      onEvent: (e) => {
        setEvs((old) => {
          const next = old.length && old[old.length - 1].seq >= e.seq ? old : [...old, e];
          seen.current = next;
          return next;
        });
        // A task's status lives in the session: reload it (at most a few
        // times a second) when an event can have changed one.
        if (e.kind === 'TASK' || e.kind === 'SUSPEND' || e.kind === 'RESUME' || e.kind === 'NODE') {
          clearTimeout(timer.current);
          timer.current = setTimeout(load, 150);
        }
      },
      onState: (s) => setLive(typeof s === 'string' ? s : tr('error: ') + s.message),
    });
    return () => { stop(); clearTimeout(timer.current); };
  }, [id]);

  const tasks = info?.tasks || [];
  const current = task ? tasks.find((t) => t.id === task) : tasks[tasks.length - 1];
  if (error && !info && (error.status === 404 || error.code === 'session_not_found')) {
    return (
      <section aria-labelledby="h-session">
        <h1 id="h-session">{tr('Session not found')}</h1>
        <ErrorNote error={error} />
        <p><a href="#/sessions">{tr('Back to the sessions')}</a></p>
      </section>
    );
  }
  return (
    <section aria-labelledby="h-session">
      <div class="bar">
        <h1 id="h-session">{tr('Session')} <code>{id}</code></h1>
        <span class={'live ' + (live === 'live' ? 'on' : 'off')} role="status" aria-live="polite">
          {live === 'live' ? tr('● live') : live === 'connecting' ? tr('connecting…') : live === 'reconnecting' ? tr('reconnecting…') : live}
        </span>
        {info && <span class="muted small">{tr('opened')} <When t={info.created} /></span>}
        {info?.locale && (
          <span class="muted small" data-agent-locale={info.locale}
            title={tr('set by the server (serve --agents: locale); the API cannot change it while it runs')}>
            {tr("Agent's language")} <code>{info.locale}</code> ({tr('read-only')})
          </span>
        )}
      </div>
      <ErrorNote error={error} />
      <Compose id={id} onSent={(t) => { load(); if (t) location.hash = `#/sessions/${enc(id)}/${enc(t)}`; }} />
      <div class="split">
        <nav aria-label={tr('Tasks')} class="tasks">
          <h2>{tr('Tasks')}</h2>
          {info && tasks.length === 0 && <p class="muted">{tr('No tasks yet: send a message.')}</p>}
          <ol>
            {tasks.map((t) => (
              <li>
                <a href={`#/sessions/${enc(id)}/${enc(t.id)}`} aria-current={current?.id === t.id ? 'true' : undefined}>
                  <code>{t.id}</code> <Badge value={t.status} />
                  <span class="objective">{t.objective.length > 200 ? t.objective.slice(0, 200) + '…' : t.objective}</span>
                </a>
              </li>
            ))}
          </ol>
        </nav>
        <div class="task">
          {current && <Task session={id} task={current} events={evs.filter((e) => e.task === current.id)} onChange={load} />}
          {info && task && !current && (
            <article aria-labelledby="h-task">
              <h2 id="h-task">{tr('Task not found')}</h2>
              <p class="error" role="alert"><code>task_not_found</code> {tr('session {s} has no task {t}', { s: id, t: task })}</p>
            </article>
          )}
        </div>
      </div>
    </section>
  );
}

// MAX_TEXT is the API's bound on a message, in bytes (UTF-8).
const MAX_TEXT = 32 << 10;
const utf8 = new TextEncoder();

function Compose({ id, onSent }) {
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const size = utf8.encode(text).length;
  const over = size > MAX_TEXT;
  const send = async (e) => {
    e.preventDefault();
    if (!text.trim() || over) return;
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
    <form class="compose" onSubmit={send} aria-label={tr('Send a message')}>
      <label for="msg">{tr('Message')}</label>
      <textarea id="msg" rows={3} value={text} onInput={(e) => setText(e.currentTarget.value)} placeholder={tr('What should the agent do? (Enter sends, Shift+Enter a new line)')}
        autocomplete="off" aria-describedby="msg-size" aria-invalid={over ? 'true' : undefined}
        onKeyDown={(e) => { if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) send(e); }} />
      <button type="submit" disabled={busy || !text.trim() || over}>{busy ? tr('Sending…') : tr('Send')}</button>
      <span id="msg-size" class={'small ' + (over ? 'error-text' : 'muted')} aria-live="polite">
        {tr(over ? '{n} / {max} bytes: too long to send' : '{n} / {max} bytes', { n: size.toLocaleString(), max: MAX_TEXT.toLocaleString() })}
      </span>
      <ErrorNote error={error} />
    </form>
  );
}

// Fold shows a long text's start with "show more".
export function Fold({ text, at = 600 }) {
  const [open, setOpen] = useState(false);
  if (!text || text.length <= at) return <>{text}</>;
  return (
    <>
      {open ? text : text.slice(0, at) + '…'}{' '}
      <button type="button" class="link" aria-expanded={open ? 'true' : 'false'} onClick={() => setOpen(!open)}>
        {open ? tr('show less') : tr('show more ({n} characters)', { n: text.length.toLocaleString() })}
      </button>
    </>
  );
}

// settled says whether a task's last event is the TASK event of its end
// or of a wait.
function settled(events, task) {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    if (e.task === task) return e.kind === 'TASK' && ['DONE', 'FAILED', 'CANCELLED', 'SUSPENDED'].includes(e.status);
  }
  return false;
}

// ending is the final TASK event of a task that ended: its status, code
// and cause.
function ending(events) {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    if (e.kind === 'TASK' && ['DONE', 'FAILED', 'CANCELLED'].includes(e.status)) return e;
  }
  return null;
}

function Task({ session, task, events, onChange }) {
  const s = task.suspension;
  return (
    <article aria-labelledby="h-task">
      <h2 id="h-task">{tr('Task')} <code>{task.id}</code> <Badge value={task.status} /></h2>
      <p class="objective"><Fold text={task.objective} /></p>
      <Timing events={events} status={task.status} />
      {task.output && <p><strong>{tr('Output:')}</strong> <Fold text={task.output} /></p>}
      {task.reply && task.reply !== task.reason && <p><strong>{tr('Reply:')}</strong> <Fold text={task.reply} /></p>}
      {task.status === 'FAILED' && <Cause task={task} end={ending(events)} />}
      {task.status !== 'FAILED' && task.reason && <p><strong>{tr('Reason:')}</strong> <Fold text={task.reason} /></p>}
      {task.status === 'SUSPENDED' && s && <Waiting session={session} task={task} onChange={onChange} />}
      {task.status === 'RUNNING' && <Resume session={session} task={task} onChange={onChange} />}
      <h3>{tr('Graph')}</h3>
      <TaskGraph events={events} task={task.id} />
      <h3>{tr('Trace')}</h3>
      <Trace events={events} />
    </article>
  );
}

// Resume runs on a task a stopped server left RUNNING (POST .../resume);
// the API refuses it while the task's run is still going.
function Resume({ session, task, onChange }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const [ask, setAsk] = useState(false);
  const go = async () => {
    setBusy(true);
    setError(null);
    try {
      await post(`/v1/sessions/${enc(session)}/tasks/${enc(task.id)}/resume?wait=0s`);
      setAsk(false);
      onChange();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="actions" role="group" aria-label={tr('Interrupted task')}>
      {!ask && <button type="button" class="ghost" onClick={() => setAsk(true)} title={tr('for a task a stopped server left running')}>{tr('Resume…')}</button>}
      {ask && <>
        <span class="small">{tr('Resume {t} from where its nodes stopped? Only a task a stopped server left running can be resumed.', { t: task.id })}</span>
        <button type="button" class="primary" disabled={busy} onClick={go}>{tr('Yes, resume')}</button>
        <button type="button" class="ghost" disabled={busy} onClick={() => setAsk(false)}>{tr('Back')}</button>
      </>}
      <ErrorNote error={error} />
    </div>
  );
}

// Timing is when the task started, when it ended (or how long it has
// run), from its events' times.
function Timing({ events, status }) {
  const times = events.map((e) => e.time).filter(Boolean);
  if (!times.length) return null;
  const first = times[0];
  const end = ending(events);
  const took = end?.time ? duration(new Date(end.time) - new Date(first)) : '';
  return (
    <p class="muted small timing">
      {tr('started')} <When t={first} /> (<Ago t={first} />)
      {end?.time ? <> · {tr('ended')} <When t={end.time} /> · {tr('took')} {took}</> : status === 'RUNNING' ? <> · {tr('running')}</> : <> · {tr('last event')} <Ago t={times[times.length - 1]} /></>}
    </p>
  );
}

// Cause is why a task failed: its final event's code and message, or the
// task's reason.
function Cause({ task, end }) {
  return (
    <section class="card cause" role="group" aria-labelledby="h-cause">
      <h3 id="h-cause">{tr('Why it failed')}</h3>
      <p>{end?.name && <code class="code" title={end.code || ''}>{end.name}</code>} <Fold text={end?.message || task.reason || tr('no cause recorded')} /></p>
      {end?.time && <p class="muted small">{tr('at')} <When t={end.time} /></p>}
    </section>
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
      <h3 id="h-wait">{tr(s.kind === 'FOLLOW_UP' ? 'Waiting for an answer' : s.kind === 'VERIFY' ? 'Waiting for verification' : 'Waiting for approval')}</h3>
      {s.kind !== 'APPROVAL' && s.question && <p class="question">{s.question}</p>}
      {s.kind === 'APPROVAL' && ap && <ApprovalCard approval={ap} onDecided={onChange} />}
      {s.kind === 'FOLLOW_UP' && (
        <form onSubmit={(e) => { e.preventDefault(); send('follow-up', { answer }); }} aria-label={tr('Answer the follow-up question')}>
          <label for="answer">{tr('Answer')}</label>
          {s.suggestions?.length > 0 && (
            <div class="suggest">{s.suggestions.map((x) => <button type="button" class="ghost" onClick={() => setAnswer(x)}>{x}</button>)}</div>
          )}
          <input id="answer" value={answer} onInput={(e) => setAnswer(e.currentTarget.value)} autocomplete="off" />
          <button type="submit" disabled={busy || !answer.trim()}>{tr('Answer')}</button>
        </form>
      )}
      {s.kind === 'VERIFY' && (
        <div class="actions" role="group" aria-label={tr('Verification')}>
          <p class="muted small">{tr('Did')} <code>{s.tool}</code> {tr('take effect? Check with its verify tool, or say what you saw.')}</p>
          <button type="button" class="primary" disabled={busy} onClick={() => send('verify', {})}>{tr('Check with the verify tool')}</button>
          <button type="button" disabled={busy} onClick={() => send('verify', { took: true })}>{tr('It was done')}</button>
          <button type="button" disabled={busy} onClick={() => send('verify', { took: false })}>{tr('It was not done')}</button>
        </div>
      )}
      <ErrorNote error={error} />
    </section>
  );
}

// Trace is the task's events as they arrive: each tool call with its
// outcome, code, message and evidence.
function Trace({ events }) {
  const shown = events;
  const tokens = events.filter((e) => e.kind === 'MODEL').reduce((n, e) => n + (e.promptTokens || 0) + (e.completionTokens || 0), 0);
  if (!shown.length) return <p class="muted">{tr('No events yet.')}</p>;
  return (
    <>
      <div class="scroll">
      <table class="trace stack" aria-live="polite">
        <caption class="sr">{tr('Trace events, oldest first')}</caption>
        <thead><tr><th scope="col">#</th>{['Time', 'Event', 'Node', 'Tool', 'Outcome', 'Code', 'Message', 'Evidence'].map((h) => <th scope="col">{tr(h)}</th>)}</tr></thead>
        <tbody>
          {shown.map((e, i) => (
            <tr class={'k-' + e.kind + (e.level === 'WARN' ? ' warn' : '')} data-seq={e.seq} data-kind={e.kind} data-tool={e.tool || ''} data-status={e.status || ''}>
              <td class="num" data-label="#">{e.seq}</td>
              <td data-label={tr('Time')}>{e.time && <time datetime={e.time} title={new Date(e.time).toLocaleString(lang())}>{clock(e.time)}</time>}
                {e.time && i > 0 && shown[i - 1].time && <div class="muted small" title={tr('since the event before')}>+{duration(new Date(e.time) - new Date(shown[i - 1].time))}</div>}</td>
              <td>{e.kind}{e.status && (e.kind !== 'TOOL' || e.status === 'SKIPPED') && <> <Badge value={e.status} /></>}</td>
              <td><code>{(e.node || '').replace(/^t\d+\./, '')}</code></td>
              <td>{e.tool && <code title={e.label || ''}>{e.tool}</code>}{e.label && <div class="muted small">{e.label}</div>}</td>
              <td><Badge value={e.outcome} /></td>
              <td>{e.name && <code title={e.code}>{e.name}</code>}{e.category && <div class="muted small">{e.category}</div>}</td>
              <td class="msg">
                {i > 0 && e.message && e.message === shown[i - 1].message
                  ? <span class="muted small">{tr('same as #{n}', { n: shown[i - 1].seq })}</span>
                  : <Fold text={e.message} at={300} />}
                {e.kind === 'MODEL' && <span class="small">{e.finish && <>{tr('finish')} <code>{e.finish}</code> · </>}
                  {e.promptTokens || e.completionTokens ? tr(e.cachedTokens ? 'tokens: {i} in, {o} out, {c} cached' : 'tokens: {i} in, {o} out', { i: e.promptTokens || 0, o: e.completionTokens || 0, c: e.cachedTokens }) : tr('no usage reported')}</span>}
                <Guards e={e} />
                {(e.input || e.sent) && (
                  <details>
                    <summary>{tr('call')}</summary>
                    {e.input && <><div class="muted small">{tr('arguments')}</div><pre>{e.input}</pre></>}
                    {e.sent && <><div class="muted small">{tr('sent to the model')}</div><pre>{e.sent}</pre></>}
                  </details>
                )}
              </td>
              <td>{e.evidence && <code>{e.evidence}</code>}</td>
            </tr>
          ))}
        </tbody>
      </table>
      </div>
      {tokens > 0 && <p class="muted small">{tr('model tokens: {n}', { n: tokens })}</p>}
    </>
  );
}

// Guards names, on a tool call's event, what decided it and every guard
// that ran, each with the plugin and slot generation that served it.
function Guards({ e }) {
  const gen = (g) => (g.generation ? ' ' + tr('gen {n}', { n: g.generation }) : '');
  const by = e.guard || e.plugin ? (
    <span class="small decider" data-generation={e.generation || 0}>{tr('decided by {who}', { who: [e.guard, e.plugin && e.plugin !== e.guard ? e.plugin : ''].filter(Boolean).join(' ') + gen(e) })}</span>
  ) : null;
  if (!e.guards?.length) return by;
  return (
    <details class="guards">
      <summary>{by || <span class="small">{tr('{n} guards', { n: e.guards.length })}</span>}</summary>
      <ul class="small">
        {e.guards.map((g) => (
          <li data-guard={g.guard} data-phase={g.phase} data-generation={g.generation || 0}>
            <code>{g.phase}</code> {g.guard}{g.plugin && g.plugin !== g.guard && <> <code>{g.plugin}</code></>}{gen(g)}: {g.verdict}{g.policy && <> ({g.policy})</>}
          </li>
        ))}
      </ul>
    </details>
  );
}

// clock is an event's time of day, to the millisecond.
function clock(t) {
  const d = new Date(t);
  return d.toLocaleTimeString([], { hour12: false }) + '.' + String(d.getMilliseconds()).padStart(3, '0');
}
