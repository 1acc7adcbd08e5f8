import { get } from './api.js';
import { ErrorNote, Loading, useLoad } from './ui.jsx';
import { Bar } from './charts.jsx';

// Feedback is the per-tool summary of the feedback records
// (TOOL_USE_RELIABILITY §4): calls, successes, failures by code, deferred
// calls and the no-progress turns each tool cost.
export function Feedback() {
  const { data, error, loading, reload } = useLoad(() => get('/v1/feedback/tools'), []);
  return (
    <section aria-labelledby="h-feedback">
      <div class="bar">
        <h1 id="h-feedback">Tool feedback</h1>
        {data && <span class="muted">{data.records} records</span>}
        <button type="button" onClick={reload}>Refresh</button>
      </div>
      <ErrorNote error={error} />
      <Loading when={loading && !data} />
      {data && <Rows title="Per tool" rows={data.tools || []} />}
      {data && data.categories?.length > 0 && <Rows title="Per error category" rows={data.categories} />}
    </section>
  );
}

function Rows({ title, rows }) {
  if (!rows.length) return <p class="muted">No records yet.</p>;
  return (
    <table class="list">
      <caption>{title}, most stalls first</caption>
      <thead>
        <tr><th scope="col">Name</th><th scope="col">Calls</th><th scope="col">Outcomes</th><th scope="col">Failures by code</th><th scope="col">Stalls</th><th scope="col">Weight</th></tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr>
            <td><code>{r.name}</code></td>
            <td class="num">{r.calls}</td>
            <td>
              <Bar label={`${r.name}: ${r.successes} succeeded, ${r.failures} failed, ${r.deferred} deferred`}
                parts={[{ n: r.successes, cls: 'ok' }, { n: r.failures, cls: 'bad' }, { n: r.deferred, cls: 'wait' }]} />
              <span class="small">{r.successes} ok · {r.failures} failed · {r.deferred} deferred</span>
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
