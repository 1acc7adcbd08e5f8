import { get } from './api.js';
import { ErrorNote, Loading, useLoad } from './ui.jsx';
import { Bar } from './charts.jsx';
import { t as tr } from './i18n.jsx';

// Feedback is the per-tool summary of the feedback records
// (TOOL_USE_RELIABILITY §4): calls, successes, failures by code, deferred
// calls and the no-progress turns each tool cost.
export function Feedback() {
  const { data, error, loading, reload } = useLoad(() => get('/v1/feedback/tools'), []);
  return (
    <section aria-labelledby="h-feedback">
      <div class="bar">
        <h1 id="h-feedback">{tr('Tool feedback')}</h1>
        {data && <span class="muted">{tr('{n} records', { n: data.records })}</span>}
        <button type="button" onClick={reload}>{tr('Refresh')}</button>
      </div>
      <ErrorNote error={error} />
      <Loading when={loading && !data} />
      {data && <Rows title={tr('Per tool, most stalls first')} rows={data.tools || []} />}
      {data && data.categories?.length > 0 && <Rows title={tr('Per error category, most stalls first')} rows={data.categories} />}
    </section>
  );
}

function Rows({ title, rows }) {
  if (!rows.length) return <p class="muted">{tr('No records yet.')}</p>;
  return (
    <table class="list">
      <caption>{title}</caption>
      <thead>
        <tr>{['Name', 'Calls', 'Outcomes', 'Failures by code', 'Stalls', 'Weight'].map((h) => <th scope="col">{tr(h)}</th>)}</tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr>
            <td><code>{r.name}</code></td>
            <td class="num">{r.calls}</td>
            <td>
              <Bar label={tr('{name}: {s} succeeded, {f} failed, {d} deferred', { name: r.name, s: r.successes, f: r.failures, d: r.deferred })}
                parts={[{ n: r.successes, cls: 'ok' }, { n: r.failures, cls: 'bad' }, { n: r.deferred, cls: 'wait' }]} />
              <span class="small">{tr('{s} ok · {f} failed · {d} deferred', { s: r.successes, f: r.failures, d: r.deferred })}</span>
            </td>
            <td>{(r.by_code || []).map((c) => <div><code title={c.code}>{c.name}</code> × {c.count}</div>)}</td>
            <td class="num">{r.stalls}</td>
            <td class="num">{typeof r.weight === 'number' ? r.weight.toFixed(2) : ''}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
