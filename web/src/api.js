// The API client: every request carries the key from sessionStorage as a
// Bearer token; an error answer becomes an ApiError with the API's code
// and message, shown to the user as the API wrote them.

const KEY = 'warden.key';
const ROLE = 'warden.role';

export function session() {
  const key = sessionStorage.getItem(KEY);
  const role = sessionStorage.getItem(ROLE);
  return key && role ? { key, role } : null;
}

export function remember(key, role) {
  sessionStorage.setItem(KEY, key);
  sessionStorage.setItem(ROLE, role);
}

export function forget() {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(ROLE);
}

// unauthorized forgets the stored key and tells the page, which shows the
// login with the API's reason.
export function unauthorized(err) {
  forget();
  dispatchEvent(new CustomEvent('warden:unauthorized', { detail: err }));
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function failure(resp) {
  let code = 'http_' + resp.status;
  let message = resp.statusText || 'request failed';
  try {
    const body = await resp.json();
    if (body && body.error) {
      code = body.error.code || code;
      message = body.error.message || message;
    }
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(resp.status, code, message);
}

// request sends one API request with key (the stored one by default) and
// returns the decoded JSON body (null for an empty one), or with withStatus
// {status, body}.
export async function request(method, path, { body, key, headers = {}, raw, withStatus } = {}) {
  const k = key ?? session()?.key ?? '';
  const h = { Authorization: 'Bearer ' + k, Accept: 'application/json', ...headers };
  let payload;
  if (raw !== undefined) {
    payload = raw;
  } else if (body !== undefined) {
    payload = JSON.stringify(body);
    h['Content-Type'] = 'application/json';
  }
  let resp;
  try {
    resp = await fetch(path, { method, headers: h, body: payload });
  } catch (e) {
    throw new ApiError(0, 'unreachable', 'the server did not answer: ' + e.message);
  }
  if (!resp.ok) {
    const err = await failure(resp);
    // The stored key no longer opens the API (revoked, or the server's
    // keys changed): back to the login, with the API's reason.
    if (resp.status === 401 && key === undefined && session()) unauthorized(err);
    throw err;
  }
  const text = await resp.text();
  const data = text ? JSON.parse(text) : null;
  return withStatus ? { status: resp.status, body: data } : data;
}

export const get = (path, opt) => request('GET', path, opt);
export const post = (path, body, opt) => request('POST', path, { ...opt, body });
export const del = (path, opt) => request('DELETE', path, opt);

// whoami finds what a key opens: a tenant's views or the platform's. A key
// neither accepts is refused with the tenant API's own error.
export async function whoami(key) {
  try {
    await get('/v1/sessions?limit=1', { key });
    return 'tenant';
  } catch (e) {
    if (e.status !== 401 && e.status !== 403) throw e;
    try {
      await get('/admin/v1/slots', { key });
      return 'admin';
    } catch (e2) {
      if (e2.status !== 401 && e2.status !== 403) throw e2;
      throw e;
    }
  }
}

// events follows a session's server-sent events. EventSource cannot send
// an Authorization header, so the stream is read with fetch and parsed
// here; on a dropped stream it reconnects after the last id it saw. onEvent
// gets each event's decoded data; onState "live" | "reconnecting" | an
// ApiError. It returns a function that stops it.
export function events(sessionID, { after = 0, onEvent, onState }) {
  return follow((last) => `/v1/sessions/${encodeURIComponent(sessionID)}/events?after=${last}`, after, onEvent, onState);
}

// tenantEvents follows the tenant's stream (GET /v1/events): the pending
// approvals, an event "synced", then each approval held or answered on any
// instance. A dropped stream resumes after the last id it saw, which the
// server answers with every approval changed since (and "synced" again).
export function tenantEvents({ onEvent, onState }) {
  return follow((last) => (last ? `/v1/events?after=${last}` : '/v1/events'), 0, onEvent, onState);
}

// follow reads the server-sent events of url(last) until stopped.
function follow(url, after, onEvent, onState) {
  const ctl = new AbortController();
  let last = after;
  let stopped = false;
  const run = async () => {
    while (!stopped) {
      try {
        const resp = await fetch(url(last), {
          headers: { Authorization: 'Bearer ' + (session()?.key ?? ''), Accept: 'text/event-stream' },
          signal: ctl.signal,
        });
        if (!resp.ok) {
          const err = await failure(resp);
          onState?.(err);
          if (resp.status === 401 && session()) unauthorized(err);
          if (resp.status === 401 || resp.status === 403 || resp.status === 404) return;
        } else {
          onState?.('live');
          await parse(resp.body, (ev) => {
            if (ev.id) last = Number(ev.id) || last;
            if (!ev.data) return;
            try {
              onEvent(JSON.parse(ev.data), ev.event);
            } catch {
              // a malformed event is skipped
            }
          });
        }
      } catch (e) {
        if (stopped) return;
      }
      if (stopped) return;
      onState?.('reconnecting');
      await new Promise((r) => setTimeout(r, 1000));
    }
  };
  run();
  return () => {
    stopped = true;
    ctl.abort();
  };
}

// parse reads an SSE stream (text/event-stream) and calls emit with
// {id, event, data} per dispatched event.
async function parse(body, emit) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let ev = { id: '', event: '', data: [] };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let nl;
    while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + (buf[nl] === '\r' && buf[nl + 1] === '\n' ? 2 : 1));
      if (line === '') {
        if (ev.data.length || ev.id) emit({ id: ev.id, event: ev.event, data: ev.data.join('\n') });
        ev = { id: '', event: '', data: [] };
        continue;
      }
      if (line.startsWith(':')) continue;
      const c = line.indexOf(':');
      const field = c < 0 ? line : line.slice(0, c);
      let v = c < 0 ? '' : line.slice(c + 1);
      if (v.startsWith(' ')) v = v.slice(1);
      if (field === 'data') ev.data.push(v);
      else if (field === 'id') ev.id = v;
      else if (field === 'event') ev.event = v;
    }
  }
}
