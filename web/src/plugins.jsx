import { useRef, useState } from 'preact/hooks';
import { del, get, request } from './api.js';
import { ConfirmDelete, ErrorNote, Loading, When, setFlash, takeFlash, useLoad } from './ui.jsx';
import { t as tr } from './i18n.jsx';

const enc = encodeURIComponent;

// The name of a tenant plugin, as the API takes it (its manifest's name).
const NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;

const hex = (s) => (s || '').replace(/^sha256:/, '');

// sha256 is a module's hex SHA-256, computed here: the pin the server
// checks the bytes it received against. SubtleCrypto exists only in a
// secure context (https, or http on 127.0.0.1 or localhost).
export async function sha256(bytes) {
  if (!globalThis.crypto?.subtle) {
    throw {
      code: 'no_subtle_crypto',
      message: tr('this browser computes SHA-256 only on a secure origin (https, or http://127.0.0.1 or localhost): open the console there, or install with warden plugins install FILE'),
    };
  }
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return Array.from(d, (b) => b.toString(16).padStart(2, '0')).join('');
}

// Status is a plugin version's status word: attached (a skill attaches it)
// or installed.
export function Status({ value }) {
  return <span class={'badge ' + (value === 'attached' ? 'run' : 'mute')}>{value}</span>;
}

function Caps({ list }) {
  if (!list?.length) return <span class="muted">{tr('none')}</span>;
  return <ul class="chips">{list.map((c) => <li><code>{c}</code></li>)}</ul>;
}

function SkillLinks({ keys }) {
  if (!keys?.length) return <span class="muted">{tr('no skill')}</span>;
  return <ul class="chips">{keys.map((k) => <li><a href={'#/skills/' + enc(k)}><code>{k}</code></a></li>)}</ul>;
}

// Plugins lists the tenant's guard and builtin modules, a row per version,
// and installs one from a file.
export function Plugins() {
  const { data, error, loading, reload } = useLoad(() => get('/v1/plugins'), []);
  const [q, setQ] = useState('');
  const [note] = useState(takeFlash);
  const plugins = data?.plugins || [];
  const needle = q.trim().toLowerCase();
  const shown = plugins.filter((p) => !needle || p.name.includes(needle) ||
    p.versions.some((v) => [v.ref, v.role, hex(v.digest), v.status, ...v.attached_by].some((x) => x && x.toLowerCase().includes(needle))));
  return (
    <section aria-labelledby="h-plugins">
      <div class="bar">
        <h1 id="h-plugins">{tr('Plugins')}</h1>
        <form role="search" onSubmit={(e) => e.preventDefault()}>
          <label for="plugin-q" class="sr">{tr('Search plugins by name, ref, digest or skill')}</label>
          <input id="plugin-q" data-search type="search" placeholder={tr('Search plugins  ( / )')} value={q} onInput={(e) => setQ(e.currentTarget.value)} />
        </form>
        <button type="button" onClick={reload}>{tr('Refresh')}</button>
      </div>
      <p class="muted small">{tr("Your tenant's guard and builtin modules. A skill's contract attaches a guard by its ref")} (<code>name@version</code>) {tr('in')} <code>guards:</code>{tr('; a plugin cannot be deleted while a skill attaches it.')}</p>
      {note && <p role="status" class="ok-note">{note}</p>}
      <ErrorNote error={error} />
      <InstallModule onDone={reload} />
      <Loading when={loading && !data} />
      {data && plugins.length === 0 && <p class="muted">{tr('No plugins installed: install a module above.')}</p>}
      {plugins.length > 0 && shown.length === 0 && <p class="muted">{tr('No plugin matches.')}</p>}
      {shown.length > 0 && (
        <table class="list stack">
          <caption>{tr('Installed modules, a row per version')}</caption>
          <thead>
            <tr>{['Plugin', 'Role', 'Version', 'Digest', 'Status', 'Capabilities', 'Installed'].map((h) => <th scope="col">{tr(h)}</th>)}</tr>
          </thead>
          <tbody>
            {shown.flatMap((p) => p.versions.map((v) => (
              <tr data-plugin={p.name} data-version={v.version}>
                <td data-label={tr('Plugin')}><a href={'#/plugins/' + enc(p.name)}><code>{p.name}</code></a></td>
                <td data-label={tr('Role')}>{v.role}</td>
                <td data-label={tr('Version')}><code>{v.version}</code></td>
                <td data-label={tr('Digest')}><code class="digest" title={v.digest}>{hex(v.digest).slice(0, 12)}…</code></td>
                <td data-label={tr('Status')}><Status value={v.status} />{v.attached_by.length > 0 && <span class="small"> {tr('by')} {v.attached_by.join(', ')}</span>}</td>
                <td data-label={tr('Capabilities')}><Caps list={v.capabilities} /></td>
                <td data-label={tr('Installed')}>{tr('by')} {v.installed_by}, <When t={v.installed} /></td>
              </tr>
            )))}
          </tbody>
        </table>
      )}
    </section>
  );
}

// InstallModule installs a module from a file: its bytes go as
// application/wasm, pinned by the sha256 computed here.
function InstallModule({ onDone }) {
  const file = useRef();
  const [name, setName] = useState('');
  const [named, setNamed] = useState(false);
  const [picked, setPicked] = useState(null);
  const [expect, setExpect] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const [note, setNote] = useState('');

  const choose = async (e) => {
    setError(null);
    setNote('');
    setPicked(null);
    const f = e.currentTarget.files?.[0];
    if (!f) return;
    if (!named) setName(f.name.replace(/\.wasm$/i, '').toLowerCase());
    try {
      const bytes = new Uint8Array(await f.arrayBuffer());
      setPicked({ bytes, digest: await sha256(bytes), size: f.size });
    } catch (e2) {
      setError(e2);
    }
  };

  const submit = async (e) => {
    e.preventDefault();
    setError(null);
    setNote('');
    const n = name.trim();
    const want = hex(expect.trim().toLowerCase());
    if (!picked) {
      setError({ code: 'no_module', message: tr('choose a .wasm module to install') });
      return;
    }
    if (!NAME.test(n)) {
      setError({ code: 'invalid_name', message: tr('a plugin name is its manifest\'s name: lowercase letters, digits, ".", "_" and "-", at most 64') });
      return;
    }
    if (want && want !== picked.digest) {
      setError({ code: 'digest_mismatch', message: tr('the file\'s sha256 is {got}, not the expected {want}: nothing was sent', { got: picked.digest, want }) });
      return;
    }
    setBusy(true);
    try {
      const { status, body } = await request('PUT', `/v1/plugins/${enc(n)}?sha256=${picked.digest}`,
        { raw: picked.bytes, headers: { 'Content-Type': 'application/wasm' }, withStatus: true });
      const v = body?.versions?.find((x) => hex(x.digest) === picked.digest);
      const ref = v?.ref ?? n;
      setNote(status === 201
        ? tr('Installed {ref}, a {role}: a skill attaches it as {ref}.', { ref, role: v?.role ?? tr('module') })
        : tr('{ref} was installed already with this module: nothing changed.', { ref }));
      file.current.value = '';
      setPicked(null);
      setNamed(false);
      setName('');
      setExpect('');
      onDone();
    } catch (e2) {
      setError(e2);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="card install" onSubmit={submit} aria-labelledby="h-install-module">
      <h2 id="h-install-module">{tr('Install a module')}</h2>
      <p class="muted small">{tr('The module is pinned by the SHA-256 this page computes, then verified and load-checked by the server; it may ask only for the capabilities your tenant is granted.')}</p>
      <div class="grid">
        <label for="plugin-module">{tr('Module (.wasm)')}</label>
        <input id="plugin-module" data-new type="file" accept=".wasm,application/wasm" ref={file} onChange={choose} required />
        <span class="muted small">SHA-256</span>
        <output for="plugin-module" aria-live="polite" class="hash" data-sha256={picked?.digest || ''}>
          {picked ? <code>{picked.digest}</code> : <span class="muted small">{tr('computed when a file is chosen')}</span>}
        </output>
        <label for="plugin-name">{tr('Name (its manifest\'s)')}</label>
        <input id="plugin-name" value={name} required autocomplete="off" spellcheck={false}
          onInput={(e) => { setName(e.currentTarget.value); setNamed(true); }} />
        <label for="plugin-expect">{tr('Expected SHA-256 (optional)')}</label>
        <input id="plugin-expect" value={expect} autocomplete="off" spellcheck={false} placeholder={tr('the digest your build printed')}
          onInput={(e) => setExpect(e.currentTarget.value)} />
      </div>
      <button type="submit" class="primary" disabled={busy}>{busy ? tr('Installing…') : tr('Install')}</button>
      {note && <p role="status" class="ok-note">{note}</p>}
      <ErrorNote error={error} />
    </form>
  );
}

// attachedIn reads the skills a 409 plugin_attached names.
function attachedIn(message) {
  const m = /attached by skills (.+?): detach/.exec(message || '');
  return m ? m[1].split(', ') : [];
}

// Plugin is one of the tenant's plugins: each version with its digest,
// capabilities, manifest and the skills attaching it, and its deletion.
export function Plugin({ name }) {
  const { data, error, loading, reload } = useLoad(() => get('/v1/plugins/' + enc(name)), [name]);
  const [delErr, setDelErr] = useState(null);
  const versions = [...(data?.versions || [])].reverse();
  const attached = [...new Set(versions.flatMap((v) => v.attached_by))];
  const remove = async () => {
    setDelErr(null);
    try {
      const p = await del('/v1/plugins/' + enc(name));
      setFlash(tr('Deleted plugin {name}: {refs}.', { name, refs: p?.versions?.map((v) => v.ref).join(', ') || tr('every version') }));
      location.hash = '#/plugins';
    } catch (e) {
      setDelErr(e);
      reload();
    }
  };
  const named = delErr?.code === 'plugin_attached' ? attachedIn(delErr.message) : [];
  return (
    <section aria-labelledby="h-plugin">
      <p class="small"><a href="#/plugins">← {tr('Plugins')}</a></p>
      <div class="bar">
        <h1 id="h-plugin">{tr('Plugin')} <code>{name}</code></h1>
        <button type="button" onClick={reload}>{tr('Refresh')}</button>
      </div>
      <ErrorNote error={error} />
      <Loading when={loading && !data} />
      {data && (
        <>
          <p>{tr(versions.length === 1 ? '{n} version installed' : '{n} versions installed', { n: versions.length })} · {tr('attached by')} <SkillLinks keys={attached} /></p>
          {versions.map((v) => (
            <article class="card" aria-labelledby={'v-' + v.version} data-version={v.version}>
              <header>
                <h2 id={'v-' + v.version}><code>{v.ref}</code></h2>
                <Status value={v.status} />
              </header>
              <table class="kv stack">
                <tbody>
                  <tr><th scope="row">{tr('Role')}</th><td>{v.role}</td></tr>
                  <tr><th scope="row">{tr('Digest')}</th><td><code class="hash">{v.digest}</code></td></tr>
                  <tr><th scope="row">{tr('Capabilities')}</th><td><Caps list={v.capabilities} /></td></tr>
                  <tr><th scope="row">{tr('Installed')}</th><td>{tr('by')} {v.installed_by}, <When t={v.installed} /></td></tr>
                  <tr><th scope="row">{tr('Attached by')}</th><td><SkillLinks keys={v.attached_by} /></td></tr>
                  <tr><th scope="row">{tr('Refs')}</th><td><code>{v.ref}</code> {tr('or')} <code class="hash">sha256:{hex(v.digest)}</code></td></tr>
                </tbody>
              </table>
              <details>
                <summary>{tr('Manifest')}</summary>
                <pre class="doc">{JSON.stringify(v.manifest, null, 2)}</pre>
              </details>
            </article>
          ))}
          <div class="actions">
            <ConfirmDelete label={tr('Delete plugin {name}', { name })} question={tr('Delete every version of {name}?', { name })} onConfirm={remove} />
          </div>
        </>
      )}
      {named.length > 0 ? (
        <div class="error" role="alert" data-code={delErr.code}>
          <p><code>{delErr.code}</code> {delErr.message}</p>
          <p>{tr('Still attached by:')} <SkillLinks keys={named} /> {tr("Remove its ref from their contracts'")} <code>guards:</code>{tr(', or delete them, then delete the plugin.')}</p>
        </div>
      ) : <ErrorNote error={delErr} />}
    </section>
  );
}
