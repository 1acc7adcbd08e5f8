import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { forget, remember, session, whoami } from './api.js';
import { ErrorNote } from './ui.jsx';
import { Sessions } from './sessions.jsx';
import { Session } from './session.jsx';
import { Approvals, usePending } from './approvals.jsx';
import { Feedback } from './feedback.jsx';
import { Slots } from './slots.jsx';
import { Instances } from './instances.jsx';
import { Plugin, Plugins } from './plugins.jsx';
import { Skill, Skills } from './skills.jsx';
import { LangSelect, t, useLang } from './i18n.jsx';
import './style.css';

// Routes live in the URL's hash, so the server serves one page and a
// reload keeps the view.
function useRoute() {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
}

const views = {
  tenant: [
    { path: 'sessions', label: 'Sessions', key: 's' },
    { path: 'approvals', label: 'Approvals', key: 'a' },
    { path: 'feedback', label: 'Tool feedback', key: 'f' },
    { path: 'plugins', label: 'Plugins', key: 'p' },
    { path: 'skills', label: 'Skills', key: 'k' },
  ],
  admin: [
    { path: 'slots', label: 'Plugin slots', key: 'p' },
    { path: 'instances', label: 'Instances', key: 'i' },
    { path: 'sessions', label: 'Sessions', key: 's' },
  ],
};

function Login({ onLogin, why }) {
  const [key, setKey] = useState('');
  const [err, setErr] = useState(why || null);
  const [busy, setBusy] = useState(false);
  const input = useRef();
  useEffect(() => input.current?.focus(), []);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setErr(null);
    try {
      const k = key.trim();
      const role = await whoami(k);
      remember(k, role);
      onLogin({ key: k, role });
    } catch (e2) {
      setErr(e2);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="login">
      <LangSelect />
      <h1>{t('Warden console')}</h1>
      <p class="muted">{t('Paste an API key. A tenant key opens that tenant\'s sessions, approvals, tool feedback, plugins and skills; an admin key opens the plugin slots and instances.')}</p>
      <form onSubmit={submit} aria-label={t('Log in')}>
        <label for="key">{t('API key')}</label>
        <input id="key" ref={input} type="password" autocomplete="off" spellcheck={false} value={key}
          onInput={(e) => setKey(e.currentTarget.value)} required />
        <button type="submit" disabled={busy || !key.trim()}>{busy ? t('Checking…') : t('Log in')}</button>
      </form>
      <ErrorNote error={err} />
      <p class="muted small">{t('The key stays in this tab\'s session storage and is sent only to this server.')}</p>
    </main>
  );
}

function Shell({ who, onLogout }) {
  const route = useRoute();
  const nav = views[who.role];
  const [help, setHelp] = useState(false);
  const head = route[0] || nav[0].path;
  const pending = usePending(who.role === 'tenant');

  useEffect(() => {
    const on = (e) => {
      const t = e.target;
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      if (t instanceof HTMLElement && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) {
        if (e.key === 'Escape') t.blur();
        return;
      }
      const v = nav.find((n) => n.key === e.key);
      if (v) {
        location.hash = '#/' + v.path;
        e.preventDefault();
      } else if (e.key === '/') {
        const s = document.querySelector('[data-search]');
        if (s) {
          s.focus();
          e.preventDefault();
        }
      } else if (e.key === 'n') {
        // The view's "new" control: install a module, upload a skill.
        const n = document.querySelector('[data-new]');
        if (n) {
          if (n.tagName === 'BUTTON') n.click();
          else n.focus();
          e.preventDefault();
        }
      } else if (e.key === '?') {
        setHelp((h) => !h);
      } else if (e.key === 'Escape') {
        setHelp(false);
      }
    };
    addEventListener('keydown', on);
    return () => removeEventListener('keydown', on);
  }, [who.role]);

  useEffect(() => {
    document.getElementById('main')?.focus({ preventScroll: true });
  }, [route.join('/')]);

  let body;
  if (who.role === 'tenant') {
    if (head === 'sessions' && route[1]) body = <Session id={route[1]} task={route[2]} />;
    else if (head === 'approvals') body = <Approvals />;
    else if (head === 'feedback') body = <Feedback />;
    else if (head === 'plugins') body = route[1] ? <Plugin name={route[1]} /> : <Plugins />;
    else if (head === 'skills') body = route[1] ? <Skill skey={route[1]} /> : <Skills />;
    else body = <Sessions />;
  } else {
    if (head === 'instances') body = <Instances />;
    else if (head === 'sessions') body = <Sessions admin />;
    else body = <Slots />;
  }
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => { e.preventDefault(); document.getElementById('main')?.focus(); }}>{t('Skip to content')}</a>
      <header class="top">
        <span class="brand" aria-hidden="true">Warden</span>
        <nav aria-label={t('Views')}>
          {nav.map((n) => (
            <a href={'#/' + n.path} aria-current={head === n.path ? 'page' : undefined} aria-keyshortcuts={n.key}>
              {t(n.label)} {n.path === 'approvals' && pending != null && pending !== 0 && <span class="count" data-pending={pending} aria-label={`${pending} ${t('pending')}`}>{pending}</span>} <kbd>{n.key}</kbd>
            </a>
          ))}
        </nav>
        <span class="who">{who.role === 'admin' ? t('platform (admin key)') : t('tenant key')}</span>
        <LangSelect />
        <button type="button" class="ghost" onClick={onLogout}>{t('Log out')}</button>
      </header>
      {help && (
        <aside class="help" role="dialog" aria-label={t('Keyboard shortcuts')}>
          <h2>{t('Keyboard')}</h2>
          <ul>
            {nav.map((n) => <li><kbd>{n.key}</kbd> {t(n.label)}</li>)}
            <li><kbd>/</kbd> {t('search')}</li>
            {who.role === 'tenant' && <li><kbd>n</kbd> {t('new: install a module (Plugins), upload a skill (Skills)')}</li>}
            <li><kbd>?</kbd> {t('this help')}, <kbd>Esc</kbd> {t('close')}</li>
            <li>{t('Tab moves through every control; forms submit on Enter')}</li>
          </ul>
        </aside>
      )}
      <main id="main" tabIndex={-1}>{body}</main>
      <footer class="muted small">{t('Press ? for keyboard shortcuts · the API is described at')} <a href="/openapi.json">/openapi.json</a></footer>
    </>
  );
}

function App() {
  const [who, setWho] = useState(session());
  const [why, setWhy] = useState(null);
  // The console's language: every view renders again when it changes.
  useLang();
  useEffect(() => {
    const on = (e) => { setWhy(e.detail); setWho(null); };
    addEventListener('warden:unauthorized', on);
    return () => removeEventListener('warden:unauthorized', on);
  }, []);
  if (!who) return <Login onLogin={(w) => { setWhy(null); setWho(w); }} why={why} />;
  return <Shell who={who} onLogout={() => { forget(); location.hash = ''; setWho(null); }} />;
}

render(<App />, document.getElementById('app'));
