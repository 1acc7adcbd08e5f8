import { useRef, useState } from 'preact/hooks';
import { get, request } from './api.js';
import { Badge, Digest, ErrorNote, Loading, When, useLoad } from './ui.jsx';
import { Bar, Columns, Histogram } from './charts.jsx';
import { t as tr } from './i18n.jsx';

const enc = encodeURIComponent;

// stat reads a counter from a slot's stats in the API's snake_case names
// (older servers spelt them as Go fields).
function stat(s, snake, go) {
  if (!s) return 0;
  const v = s[snake] ?? s[go];
  return typeof v === 'number' ? v : 0;
}

const outcomes = [
  ['pass', 'Pass', 'ok'], ['success', 'Success', 'ok'], ['failed', 'Failed', 'bad'], ['rejected', 'Rejected', 'bad'],
  ['deferred', 'Deferred', 'wait'], ['traps', 'Traps', 'bad'], ['timeouts', 'Timeouts', 'bad'],
  ['memory_limits', 'MemoryLimits', 'bad'], ['violations', 'Violations', 'bad'], ['unavailable', 'Unavailable', 'bad'],
];

// latency finds a stats histogram: {bounds_ms, counts}, wherever the API
// puts it.
function latency(s) {
  if (!s) return null;
  for (const v of Object.values(s)) {
    if (v && typeof v === 'object' && Array.isArray(v.counts) && Array.isArray(v.bounds_ms)) return v;
  }
  if (Array.isArray(s.Latency)) return { bounds_ms: [], counts: s.Latency };
  return null;
}

function meanMs(s) {
  const calls = stat(s, 'calls', 'Calls');
  if (!calls) return 0;
  const ms = s.latency_ms_total ?? (typeof s.TotalLatency === 'number' ? s.TotalLatency / 1e6 : 0);
  return ms / calls;
}

// seen keeps, per slot and generation, the last stats this tab saw: the
// API reports the serving generation's counters only, so a generation
// swapped out keeps the numbers it had when the console last looked.
const SEEN = 'warden.slotstats';
function remember(slots) {
  let seen = {};
  try {
    seen = JSON.parse(sessionStorage.getItem(SEEN) || '{}');
  } catch {
    seen = {};
  }
  for (const s of slots) {
    if (!s.stats || !s.current) continue;
    const m = (seen[s.name] ||= {});
    m[s.current.number] = s.stats;
  }
  sessionStorage.setItem(SEEN, JSON.stringify(seen));
  return seen;
}

// Slots is the platform's view of the plugin slots: each slot's serving
// generation, its history, the candidates it refused, its metrics, and
// install and rollback.
export function Slots() {
  const { data, error, loading, reload } = useLoad(() => get('/admin/v1/slots'), []);
  const slots = data?.slots || [];
  const seen = remember(slots);
  return (
    <section aria-labelledby="h-slots">
      <div class="bar">
        <h1 id="h-slots">{tr('Plugin slots')}</h1>
        <button type="button" onClick={reload}>{tr('Refresh')}</button>
      </div>
      <ErrorNote error={error} />
      <Install slots={slots} onDone={reload} />
      <Loading when={loading && !data} />
      {data && slots.length === 0 && <p class="muted">{tr('No slots: install a module to create one.')}</p>}
      <div class="cards">{slots.map((s) => <Slot key={s.name} slot={s} seen={seen[s.name] || {}} onChange={reload} />)}</div>
    </section>
  );
}

function Install({ slots, onDone }) {
  const [name, setName] = useState('');
  const [config, setConfig] = useState('');
  const [pin, setPin] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const [note, setNote] = useState('');
  const file = useRef();
  const submit = async (e) => {
    e.preventDefault();
    setError(null);
    setNote('');
    const f = file.current?.files?.[0];
    if (!f) {
      setError({ code: 'no_module', message: tr('choose a .wasm module to install') });
      return;
    }
    let cfg = config.trim();
    if (cfg) {
      try {
        cfg = JSON.stringify(JSON.parse(cfg));
      } catch (e2) {
        setError({ code: 'invalid_config', message: tr('the config is not JSON: ') + e2.message });
        return;
      }
    }
    setBusy(true);
    try {
      const bytes = new Uint8Array(await f.arrayBuffer());
      const path = `/admin/v1/slots/${enc(name.trim())}`;
      let r;
      // The module goes as the body; a config that a header cannot carry
      // (not ASCII) goes in the JSON form instead.
      if (/^[\x20-\x7e]*$/.test(cfg)) {
        const headers = { 'Content-Type': 'application/wasm' };
        if (cfg) headers['Warden-Config'] = cfg;
        r = await request('PUT', path + (pin.trim() ? '?sha256=' + enc(pin.trim()) : ''), { raw: bytes, headers });
      } else {
        let bin = '';
        for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
        r = await request('PUT', path, { body: { module: btoa(bin), sha256: pin.trim() || undefined, config: JSON.parse(cfg) } });
      }
      // A 202 names a rollout still under way: the candidate is not
      // serving until every live instance holds it ready.
      if (r?.rollout && !r.rollout.done) {
        setNote(tr('Recorded {name}: generation {n} is {state}; waiting for {pending}.', { name: r?.name ?? name, n: r.rollout.generation, state: r.rollout.state, pending: (r.rollout.pending || []).join(', ') || '-' }));
      } else {
        setNote(tr('Installed {name}: generation {n} ({ref}) is serving.', { name: r?.name ?? name, n: r?.current?.number ?? '?', ref: r?.current?.ref ?? '' }));
      }
      file.current.value = '';
      onDone();
    } catch (e2) {
      setError(e2);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card install" onSubmit={submit} aria-labelledby="h-install">
      <h2 id="h-install">{tr('Install a generation')}</h2>
      <p class="muted small">{tr('The candidate is verified, compiled, configured and self-tested before it serves; a candidate that fails leaves the serving generation alone.')}</p>
      <div class="grid">
        <label for="slot-name">{tr('Slot')}</label>
        <input id="slot-name" list="slot-names" value={name} required pattern="[A-Za-z][A-Za-z0-9_.\-]{0,63}"
          onInput={(e) => setName(e.currentTarget.value)} autocomplete="off" />
        <datalist id="slot-names">{slots.map((s) => <option value={s.name} />)}</datalist>
        <label for="slot-module">{tr('Module (.wasm)')}</label>
        <input id="slot-module" type="file" accept=".wasm,application/wasm" ref={file} required />
        <label for="slot-pin">{tr('SHA-256 pin (optional)')}</label>
        <input id="slot-pin" value={pin} onInput={(e) => setPin(e.currentTarget.value)} autocomplete="off" spellcheck={false} />
        <label for="slot-config">{tr('Config, JSON (optional)')}</label>
        <textarea id="slot-config" rows={3} value={config} onInput={(e) => setConfig(e.currentTarget.value)} spellcheck={false}
          onKeyDown={(e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) e.currentTarget.form.requestSubmit(); }} />
      </div>
      <button type="submit" class="primary" disabled={busy}>{busy ? tr('Installing…') : tr('Install')}</button>
      {note && <p role="status" class="ok-note">{note}</p>}
      <ErrorNote error={error} />
    </form>
  );
}

function Slot({ slot, seen, onChange }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const cur = slot.current;
  const gens = [...(slot.generations || [])].sort((a, b) => b.number - a.number);
  const rollback = async () => {
    setBusy(true);
    setError(null);
    try {
      await request('POST', `/admin/v1/slots/${enc(slot.name)}/rollback`);
      onChange();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  // Metrics per generation where the API gives them; else the serving
  // generation's counters and the last ones seen of the others.
  const statsOf = (g) => g.stats ?? (g.number === cur.number ? slot.stats : seen[g.number] ?? null);
  const withStats = gens.filter((g) => statsOf(g)).sort((a, b) => a.number - b.number);
  const hist = latency(slot.stats);
  return (
    <article class="card slot" aria-labelledby={'slot-' + slot.name} data-slot={slot.name}>
      <header>
        <h2 id={'slot-' + slot.name}><code>{slot.name}</code></h2>
        <span>{tr('serving')} <strong data-current={cur.number}>{tr('generation {n}', { n: cur.number })}</strong> <code>{cur.ref}</code> <Digest value={cur.digest} /></span>
        <button type="button" onClick={rollback} disabled={busy || gens.filter((g) => g.number !== cur.number).length === 0}
          title={tr('Serve the previous generation again')}>{busy ? tr('Rolling back…') : tr('Roll back')}</button>
      </header>
      <ErrorNote error={error} />
      <p class="muted small">
        {tr('{calls} calls · {live} live instances ({idle} idle) · {busy} in flight', {
          calls: stat(slot.stats, 'calls', 'Calls'), live: stat(slot.stats, 'instances_live', 'InstancesLive'),
          idle: stat(slot.stats, 'instances_idle', 'InstancesIdle'), busy: stat(slot.stats, 'in_flight', 'InFlight'),
        })}
        {slot.stats?.instance_memory_bytes_max > 0 && <> · {tr('largest instance memory {n} MiB', { n: (slot.stats.instance_memory_bytes_max / 1048576).toFixed(1) })}
          {slot.stats.memory_limit_pages > 0 && <> {tr('of {n} MiB', { n: (slot.stats.memory_limit_pages / 16).toFixed(0) })}</>}</>}
      </p>
      <div class="charts">
        <figure>
          <figcaption>{tr('Outcomes per generation')}</figcaption>
          {withStats.map((g) => {
            const s = statsOf(g);
            const parts = outcomes.map(([k, go, cls]) => ({ n: stat(s, k, go), cls, k }));
            return (
              <div class="outcomes">
                <span class="gen">{tr('gen {n}', { n: g.number })}{g.number !== cur.number && !g.stats && <span class="muted" title={tr('last seen by this console')}> *</span>}</span>
                <Bar width={220} parts={parts} label={tr('generation {n}', { n: g.number }) + ': ' + parts.filter((p) => p.n).map((p) => `${p.k} ${p.n}`).join(', ')} />
                <span class="small">{parts.filter((p) => p.n).map((p) => `${p.k} ${p.n}`).join(' · ') || tr('no calls')}</span>
              </div>
            );
          })}
        </figure>
        <figure>
          <figcaption>{tr('Mean latency per generation')}</figcaption>
          <Columns label={tr('mean latency, ms')} unit=" ms"
            items={withStats.map((g) => { const m = meanMs(statsOf(g)); return { name: tr('gen {n}', { n: g.number }), value: m, text: m ? m.toFixed(2) : '0' }; })} />
        </figure>
        <figure>
          <figcaption>{tr('Latency, generation {n}', { n: cur.number })}</figcaption>
          {hist ? <Histogram bounds={hist.bounds_ms} counts={hist.counts} label={tr('latency of generation {n}', { n: cur.number })} /> : <p class="muted small">{tr('No histogram.')}</p>}
        </figure>
      </div>
      {withStats.some((g) => g.number !== cur.number && !g.stats) && <p class="muted small">{tr('* a generation no longer serving: its counters as this console last saw them.')}</p>}
      <table class="list gens">
        <caption>{tr('Generations, newest first')}</caption>
        <thead><tr><th scope="col">#</th>{['Plugin', 'Digest', 'Installed', 'Self-test', 'State'].map((h) => <th scope="col">{tr(h)}</th>)}</tr></thead>
        <tbody>
          {gens.map((g) => (
            <tr data-generation={g.number}>
              <td class="num">{g.number}</td>
              <td><code>{g.ref}</code></td>
              <td><Digest value={g.digest} /></td>
              <td><When t={g.installed} /></td>
              <td><Badge value="PASS" /></td>
              <td>{g.number === cur.number ? <span class="badge ok">{tr('serving')}</span> : g.retired ? <span class="muted">{tr('retired')} <When t={g.retired} /></span> : <span class="muted">{tr('standby')}</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <Rollout slot={slot} />
      <History slot={slot} onChange={onChange} />
      {slot.refused?.length > 0 && (
        <details>
          <summary>{tr(slot.refused.length === 1 ? '{n} refused candidate' : '{n} refused candidates', { n: slot.refused.length })}</summary>
          <table class="list">
            <thead><tr>{['When', 'Digest', 'Origin', 'Why (load or self-test)'].map((h) => <th scope="col">{tr(h)}</th>)}</tr></thead>
            <tbody>
              {slot.refused.map((r) => (
                <tr><td><When t={r.time} /></td><td><Digest value={r.digest} /></td><td>{r.origin}{r.file && <> <code>{r.file}</code></>}</td><td class="msg">{r.reason}</td></tr>
              ))}
            </tbody>
          </table>
        </details>
      )}
    </article>
  );
}

// Rollout is the slot's desired generation in the store, which every
// instance sharing it serves once it has loaded it, and what each instance
// reported: the generation it serves, since when, and the last one it
// refused, with why.
function Rollout({ slot }) {
  const d = slot.desired;
  const ins = slot.instances || [];
  if (!d) return null;
  return (
    <div class="rollout" data-desired={d.number}>
      <p class="small">
        {tr('desired')} <strong>{tr('generation {n}', { n: d.number })}</strong> <code>{d.ref}</code> <Digest value={d.digest} />
        {' · '}{origin(d)}{d.instance && <> · {tr('by {who}', { who: d.instance })}</>} · <When t={d.time} />
      </p>
      <table class="list rollout">
        <caption>{tr('Rollout to the instances')}</caption>
        <thead><tr>{['Instance', 'Serves', 'Since', 'Refused'].map((h) => <th scope="col">{tr(h)}</th>)}</tr></thead>
        <tbody>
          {ins.map((i) => (
            <tr data-instance={i.instance} data-serving={i.serving} data-refused={i.refused || 0}>
              <td><code>{i.instance}</code></td>
              <td>{i.serving ? tr('generation {n}', { n: i.serving }) : tr('none of the store\'s')}{' '}
                {i.serving === d.number ? <span class="badge ok">{tr('desired')}</span> : <span class="badge wait">{tr('not yet')}</span>}</td>
              <td><When t={i.since} /></td>
              <td class="msg">{i.refused > 0 && <><span class="badge bad">{tr('generation {n}', { n: i.refused })}</span> {i.reason}</>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

// origin says where a stored generation came from.
const origins = { admin: 'admin API', start: 'loaded at start', watch: 'watched directory', rollback: 'rollback' };
function origin(g) {
  return g.from ? tr('rollback to {n}', { n: g.from }) : tr(origins[g.origin] || g.origin);
}

// bound is a latency quantile as the bucket bound that holds it.
function bound(c, v) {
  if (!c?.calls) return '';
  return v == null ? '> 1 s' : '≤ ' + v + ' ms';
}

// History is the slot's kept generations in the store, newest first,
// each with its counters summed over the instances that served it (its
// served calls by outcome and their latency; the probes of its load check
// and self-tests apart); any one but the desired one can serve again.
function History({ slot, onChange }) {
  const [busy, setBusy] = useState(0);
  const [error, setError] = useState(null);
  const kept = [...(slot.kept || [])].reverse();
  if (!kept.length) return null;
  const desired = slot.desired?.number;
  const rollback = async (n) => {
    setBusy(n);
    setError(null);
    try {
      await request('POST', `/admin/v1/slots/${enc(slot.name)}/rollback?to=${n}`);
      onChange();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(0);
    }
  };
  return (
    <>
      <div class="scroll">
        <table class="list kept">
          <caption>{tr('History in the store, newest first: each generation\'s served calls over every instance')}</caption>
          <thead><tr><th scope="col">#</th>{['Plugin', 'Digest', 'Origin', 'Installed', 'Calls', 'Outcomes', 'p50', 'p99', 'Probes', ''].map((h) => <th scope="col">{h && tr(h)}</th>)}</tr></thead>
          <tbody>
            {kept.map((g) => {
              const c = g.counts;
              const outs = Object.entries(c?.outcomes || {}).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`).join(' · ');
              return (
                <tr data-kept={g.number} data-calls={c?.calls ?? ''}>
                  <td class="num">{g.number}</td>
                  <td><code>{g.ref}</code></td>
                  <td><Digest value={g.digest} /></td>
                  <td>{origin(g)}{g.instance && <div class="muted small">{tr('by {who}', { who: g.instance })}</div>}</td>
                  <td><When t={g.time} /></td>
                  <td class="num" title={c ? tr('counted by {who}', { who: c.instances.join(', ') }) : ''}>{c ? c.calls : ''}</td>
                  <td class="small">{c ? outs || tr('no calls') : <span class="muted">{tr('not counted yet')}</span>}</td>
                  <td class="num">{bound(c, c?.p50_ms)}</td>
                  <td class="num">{bound(c, c?.p99_ms)}</td>
                  <td class="num">{c ? c.probes : ''}</td>
                  <td>{g.number === desired ? <span class="badge ok">{tr('desired')}</span>
                    : <button type="button" onClick={() => rollback(g.number)} disabled={busy > 0}
                      aria-label={tr('Roll back to generation {n}', { n: g.number })}>{busy === g.number ? tr('Rolling back…') : tr('Roll back to {n}', { n: g.number })}</button>}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      <ErrorNote error={error} />
    </>
  );
}
