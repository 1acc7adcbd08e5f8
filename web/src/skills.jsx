import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { del, get, request } from './api.js';
import { Badge, ConfirmDelete, ErrorNote, Loading, When, setFlash, takeFlash, useLoad } from './ui.jsx';
import { t as tr } from './i18n.jsx';

const enc = encodeURIComponent;

// A skill_key, as the API takes it: lowercase and dotted.
const KEY = /^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$/;

// The fields of an upload (PUT /v1/skills/{skill_key}).
const FIELDS = ['skill_key', 'skill_name', 'semantic_desc', 'skill_manual', 'skill_contract', 'toolNames', 'status'];

// pluginOf is the plugin a guard ref names (name@version), for a link.
const pluginOf = (ref) => (ref.startsWith('sha256:') ? '' : ref.split('@')[0]);

function GuardLinks({ refs }) {
  if (!refs?.length) return <span class="muted">{tr('none')}</span>;
  return (
    <ul class="chips">
      {refs.map((r) => <li>{pluginOf(r) ? <a href={'#/plugins/' + enc(pluginOf(r))}><code>{r}</code></a> : <code class="hash">{r}</code>}</li>)}
    </ul>
  );
}

function ToolList({ names }) {
  if (!names?.length) return <span class="muted">{tr('none')}</span>;
  return <ul class="chips">{names.map((n) => <li><code>{n}</code></li>)}</ul>;
}

// Skills lists the tenant's skills in effect (the server's skill directory
// and the uploaded ones) and uploads a new one.
export function Skills() {
  const { data, error, loading, reload } = useLoad(() => get('/v1/skills'), []);
  const [q, setQ] = useState('');
  const [note] = useState(takeFlash);
  const [adding, setAdding] = useState(false);
  const skills = data?.skills || [];
  const needle = q.trim().toLowerCase();
  const shown = skills.filter((s) => !needle ||
    [s.skill_key, s.skill_name, s.status, s.source, ...s.toolNames, ...s.guards].some((x) => x && x.toLowerCase().includes(needle)));
  return (
    <section aria-labelledby="h-skills">
      <div class="bar">
        <h1 id="h-skills">{tr('Skills')}</h1>
        <form role="search" onSubmit={(e) => e.preventDefault()}>
          <label for="skill-q" class="sr">{tr('Search skills by key, name, tool or guard')}</label>
          <input id="skill-q" data-search type="search" placeholder={tr('Search skills  ( / )')} value={q} onInput={(e) => setQ(e.currentTarget.value)} />
        </form>
        <button type="button" onClick={reload}>{tr('Refresh')}</button>
        <button type="button" data-new aria-expanded={adding} onClick={() => setAdding((a) => !a)}>{tr('Upload a skill')}</button>
      </div>
      <p class="muted small">{tr("Every message loads its agent's skills as they are then: an upload takes effect with the next message. A skill of the server's skill directory is replaced by an upload of the same key.")}</p>
      {note && <p role="status" class="ok-note">{note}</p>}
      <ErrorNote error={error} />
      {adding && <SkillEditor onCancel={() => setAdding(false)} />}
      <Loading when={loading && !data} />
      {data && skills.length === 0 && <p class="muted">{tr('No skills: upload one.')}</p>}
      {skills.length > 0 && shown.length === 0 && <p class="muted">{tr('No skill matches.')}</p>}
      {shown.length > 0 && (
        <table class="list stack">
          <caption>{tr("The tenant's skills")}</caption>
          <thead>
            <tr>{['Skill', 'Name', 'Status', 'Tools', 'Guards', 'Source'].map((h) => <th scope="col">{tr(h)}</th>)}</tr>
          </thead>
          <tbody>
            {shown.map((s) => (
              <tr data-skill={s.skill_key}>
                <td data-label={tr('Skill')}><a href={'#/skills/' + enc(s.skill_key)}><code>{s.skill_key}</code></a></td>
                <td data-label={tr('Name')}>{s.skill_name}</td>
                <td data-label={tr('Status')}><Badge value={s.status} /></td>
                <td data-label={tr('Tools')}><ToolList names={s.toolNames} /></td>
                <td data-label={tr('Guards')}><GuardLinks refs={s.guards} /></td>
                <td data-label={tr('Source')}>{s.source === 'files' ? tr('skill directory') : <>{tr('uploaded')}{s.updated && <>, <When t={s.updated} /></>}</>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

// Skill is one skill: its profile, tools, guards and contract as written;
// it is edited (uploaded again) or deleted here.
export function Skill({ skey }) {
  const { data, error, loading, reload } = useLoad(() => get('/v1/skills/' + enc(skey)), [skey]);
  const [editing, setEditing] = useState(false);
  const [note, setNote] = useState(takeFlash);
  const [delErr, setDelErr] = useState(null);
  useEffect(() => { setEditing(false); setDelErr(null); }, [skey]);
  const remove = async () => {
    setDelErr(null);
    try {
      await del('/v1/skills/' + enc(skey));
      setFlash(tr('Deleted skill {key}: the next message loads without it.', { key: skey }));
      location.hash = '#/skills';
    } catch (e) {
      setDelErr(e);
    }
  };
  return (
    <section aria-labelledby="h-skill">
      <p class="small"><a href="#/skills">← {tr('Skills')}</a></p>
      <div class="bar">
        <h1 id="h-skill">{tr('Skill')} <code>{skey}</code> {data && <Badge value={data.status} />}</h1>
        <button type="button" onClick={reload}>{tr('Refresh')}</button>
      </div>
      {note && <p role="status" class="ok-note">{note}</p>}
      <ErrorNote error={error} />
      <Loading when={loading && !data} />
      {data && (
        <>
          <table class="kv stack">
            <tbody>
              <tr><th scope="row">{tr('Name')}</th><td>{data.skill_name}</td></tr>
              {data.semantic_desc && <tr><th scope="row">{tr('Description')}</th><td>{data.semantic_desc}</td></tr>}
              <tr><th scope="row">{tr('Tools')}</th><td><ToolList names={data.toolNames} /></td></tr>
              <tr><th scope="row">{tr('Guards attached')}</th><td><GuardLinks refs={data.guards} /></td></tr>
              <tr><th scope="row">{tr('Source')}</th><td>{tr(data.source === 'files' ? "the server's skill directory (an upload of this key replaces it)" : 'uploaded')}</td></tr>
              {data.updated && <tr><th scope="row">{tr('Updated')}</th><td>{tr('by')} {data.updated_by}, <When t={data.updated} /></td></tr>}
            </tbody>
          </table>
          <div class="actions">
            <button type="button" aria-expanded={editing} onClick={() => setEditing((x) => !x)}>{editing ? tr('Close the editor') : tr('Edit')}</button>
            <ConfirmDelete label={tr('Delete skill {key}', { key: skey })} question={tr('Delete skill {key}?', { key: skey })} onConfirm={remove} />
          </div>
          <ErrorNote error={delErr} />
          {editing && (
            <SkillEditor initial={data} onCancel={() => setEditing(false)}
              onSaved={(msg) => { setEditing(false); setNote(msg); reload(); }} />
          )}
          <h2>{tr('Manual')}</h2>
          <pre class="doc prose">{data.skill_manual}</pre>
          <h2>{tr('Contract')}</h2>
          <pre class="doc" aria-label={tr('Contract as written')}>{data.skill_contract}</pre>
        </>
      )}
    </section>
  );
}

// problemsOf reads a 400 skill_invalid message, "skill K: N problem(s):
// p1; p2", into its N problems; null when it does not read so.
export function problemsOf(message) {
  const m = /^skill \S+: (\d+) problem\(s\): ([\s\S]*)$/.exec(message || '');
  if (!m) return null;
  const items = m[2].split('; ');
  return items.length === Number(m[1]) ? items : [m[2]];
}

// fieldOf is the editor field a problem is about.
function fieldOf(problem) {
  const at = problem.split(':')[0];
  if (at.startsWith('toolNames')) return 'tools';
  if (at === 'skill_name') return 'name';
  if (at === 'status') return 'status';
  return 'contract';
}

const labels = { tools: 'Tool names', name: 'Name', status: 'Status', contract: 'Contract' };

// rawMember is the text of a top-level member of a JSON object as written,
// so a contract given as an object is sent with its numbers and key order
// as in the file. text is valid JSON (JSON.parse read it).
function rawMember(text, name) {
  let i = 0;
  const ws = () => { while (i < text.length && /\s/.test(text[i])) i++; };
  const str = () => {
    const s = i++;
    while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i++;
    return JSON.parse(text.slice(s, i));
  };
  const value = () => {
    const s = i;
    if (text[i] === '"') {
      str();
    } else if (text[i] === '{' || text[i] === '[') {
      let depth = 0;
      do {
        const c = text[i];
        if (c === '"') {
          str();
          continue;
        }
        if (c === '{' || c === '[') depth++;
        else if (c === '}' || c === ']') depth--;
        i++;
      } while (depth > 0);
    } else {
      while (i < text.length && !/[\s,}\]]/.test(text[i])) i++;
    }
    return text.slice(s, i);
  };
  ws();
  if (text[i] !== '{') return null;
  i++;
  for (;;) {
    ws();
    if (text[i] !== '"') return null;
    const k = str();
    ws();
    i++; // :
    ws();
    const v = value();
    if (k === name) return v;
    ws();
    if (text[i] !== ',') return null;
    i++;
  }
}

// SkillEditor uploads a skill: a new one, or initial edited. A JSON file in
// the upload's shape (the CLI's, skill_contract as text or an object) fills
// the fields; a 400 lists every problem the server found, each with the
// field it is about.
export function SkillEditor({ initial, onCancel, onSaved }) {
  const [f, setF] = useState(() => ({
    key: initial?.skill_key ?? '',
    name: initial?.skill_name ?? '',
    desc: initial?.semantic_desc ?? '',
    manual: initial?.skill_manual ?? '',
    contract: initial?.skill_contract ?? '',
    tools: (initial?.toolNames ?? []).join(', '),
    status: initial?.status || 'ACTIVE',
  }));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const [problems, setProblems] = useState(null);
  const [loaded, setLoaded] = useState('');
  const first = useRef();
  const heading = initial ? tr('Edit skill {key}', { key: initial.skill_key }) : tr('Upload a skill');
  const hid = initial ? 'h-edit-skill' : 'h-new-skill';
  // Focused as it is drawn, so that keys typed at once go to the field, not to the view's shortcuts.
  useLayoutEffect(() => first.current?.focus(), []);
  const set = (k) => (e) => setF((o) => ({ ...o, [k]: e.currentTarget.value }));
  const bad = new Set((problems || []).map(fieldOf));
  const invalid = (k) => (bad.has(k) ? { 'aria-invalid': 'true', 'aria-describedby': 'skill-problems' } : {});
  const focus = (k) => document.getElementById('skill-' + k)?.focus();
  const submitOnCtrlEnter = (e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) e.currentTarget.form.requestSubmit(); };

  const load = async (e) => {
    setError(null);
    setProblems(null);
    setLoaded('');
    const file = e.currentTarget.files?.[0];
    if (!file) return;
    const text = await file.text();
    let doc;
    try {
      doc = JSON.parse(text);
    } catch (e2) {
      setError({ code: 'bad_json', message: tr('{file} is not JSON: {err}', { file: file.name, err: e2.message }) });
      return;
    }
    if (!doc || typeof doc !== 'object' || Array.isArray(doc)) {
      setError({ code: 'bad_json', message: tr('{file} is not a JSON object', { file: file.name }) });
      return;
    }
    const unknown = Object.keys(doc).filter((k) => !FIELDS.includes(k));
    if (unknown.length) {
      setError({ code: 'unknown_field', message: tr('{file} has fields a skill upload does not take: {bad} (it takes {ok})', { file: file.name, bad: unknown.join(', '), ok: FIELDS.join(', ') }) });
      return;
    }
    let contract = doc.skill_contract ?? '';
    if (contract && typeof contract === 'object') contract = rawMember(text, 'skill_contract') ?? JSON.stringify(contract, null, 2);
    setF((o) => ({
      key: initial ? o.key : (doc.skill_key ?? o.key),
      name: doc.skill_name ?? '',
      desc: doc.semantic_desc ?? '',
      manual: doc.skill_manual ?? '',
      contract: String(contract),
      tools: Array.isArray(doc.toolNames) ? doc.toolNames.join(', ') : '',
      status: doc.status || 'ACTIVE',
    }));
    setLoaded(tr('Read {file}: check the fields, then upload.', { file: file.name }));
  };

  const submit = async (e) => {
    e.preventDefault();
    setError(null);
    setProblems(null);
    const key = f.key.trim();
    if (!KEY.test(key) || key.length > 128) {
      setError({ code: 'invalid_key', message: tr('a skill key is lowercase and dotted, like cms.article.lifecycle (at most 128 characters)') });
      first.current?.focus();
      return;
    }
    const body = {
      skill_name: f.name,
      skill_manual: f.manual,
      skill_contract: f.contract,
      toolNames: f.tools.split(/[\s,]+/).filter(Boolean),
      status: f.status,
    };
    if (f.desc) body.semantic_desc = f.desc;
    setBusy(true);
    try {
      const { status } = await request('PUT', '/v1/skills/' + enc(key), { body, withStatus: true });
      const msg = tr(status === 201 ? 'Uploaded skill {key}: it takes effect with the next message.' : 'Updated skill {key}: it takes effect with the next message.', { key });
      if (onSaved) {
        onSaved(msg);
      } else {
        setFlash(msg);
        location.hash = '#/skills/' + enc(key);
      }
    } catch (e2) {
      const ps = e2.code === 'skill_invalid' ? problemsOf(e2.message) : null;
      if (ps) {
        setProblems(ps);
        setError(e2);
      } else {
        setError(e2);
      }
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="card install wide" onSubmit={submit} aria-labelledby={hid}>
      <h2 id={hid}>{heading}</h2>
      <div class="grid">
        <label for="skill-file">{tr('Fill from a JSON file (optional)')}</label>
        <input id="skill-file" type="file" accept=".json,application/json" onChange={load} />
        <label for="skill-key">{tr('Skill key')}</label>
        <input id="skill-key" ref={first} value={f.key} onInput={set('key')} readOnly={!!initial} required autocomplete="off" spellcheck={false}
          placeholder="cms.website.guarded" />
        <label for="skill-name">{tr('Name')}</label>
        <input id="skill-name" value={f.name} onInput={set('name')} required {...invalid('name')} />
        <label for="skill-desc">{tr('Description (optional)')}</label>
        <input id="skill-desc" value={f.desc} onInput={set('desc')} />
        <label for="skill-status">{tr('Status')}</label>
        <select id="skill-status" value={f.status} onChange={set('status')} {...invalid('status')}>
          <option value="ACTIVE">ACTIVE: {tr('loaded by every message')}</option>
          <option value="INACTIVE">INACTIVE: {tr('kept, not loaded')}</option>
        </select>
        <label for="skill-tools">{tr('Tool names')}</label>
        <input id="skill-tools" value={f.tools} onInput={set('tools')} autocomplete="off" spellcheck={false}
          placeholder="find_website, create_website" {...invalid('tools')} />
        <label for="skill-manual">{tr('Manual')}</label>
        <textarea id="skill-manual" rows={3} value={f.manual} onInput={set('manual')} onKeyDown={submitOnCtrlEnter} />
        <label for="skill-contract">{tr('Contract (JSON)')}</label>
        <textarea id="skill-contract" class="code" rows={12} value={f.contract} onInput={set('contract')} spellcheck={false}
          onKeyDown={submitOnCtrlEnter} {...invalid('contract')} />
      </div>
      <p class="muted small">{tr('The contract is sent exactly as written.')} <kbd>Ctrl</kbd>+<kbd>Enter</kbd> {tr('in a text area uploads.')}</p>
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>{busy ? tr('Uploading…') : tr('Upload')}</button>
        <button type="button" onClick={onCancel}>{tr('Cancel')}</button>
      </div>
      {loaded && <p role="status" class="ok-note">{loaded}</p>}
      {problems ? (
        <div class="error" role="alert" id="skill-problems" data-code={error.code}>
          <p><code>{error.code}</code> {tr(problems.length === 1 ? 'The server refused the skill: {n} problem.' : 'The server refused the skill: {n} problems.', { n: problems.length })}</p>
          <ol class="problems">
            {problems.map((p) => (
              <li>
                <span>{p}</span> <button type="button" class="link" onClick={() => focus(fieldOf(p))}>{tr('edit')} {tr(labels[fieldOf(p)])}</button>
              </li>
            ))}
          </ol>
        </div>
      ) : <ErrorNote error={error} />}
    </form>
  );
}
