import { get } from './api.js';
import { ErrorNote, Loading, When, useLoad } from './ui.jsx';
import { t as tr } from './i18n.jsx';

// Instances lists the warden serve instances sharing the session
// directory, the lease each holds and the sessions it serves.
export function Instances() {
  const { data, error, loading, reload } = useLoad(() => get('/admin/v1/instances'), []);
  const list = data?.instances || [];
  const now = Date.now();
  return (
    <section aria-labelledby="h-instances">
      <div class="bar">
        <h1 id="h-instances">{tr('Instances')}</h1>
        <button type="button" onClick={reload}>{tr('Refresh')}</button>
      </div>
      <ErrorNote error={error} />
      <Loading when={loading && !data} />
      {data && (
        <table class="list">
          <caption class="sr">{tr('Instances and their leases')}</caption>
          <thead><tr>{['Instance', 'Lease until', 'Lease', 'Sessions'].map((h) => <th scope="col">{tr(h)}</th>)}</tr></thead>
          <tbody>
            {list.map((i) => {
              const until = i.lease_until ? Date.parse(i.lease_until) : 0;
              return (
                <tr>
                  <td><code>{i.id}</code>{i.self && <span class="badge run">{tr('this instance')}</span>}</td>
                  <td>{i.lease_until ? <When t={i.lease_until} /> : <span class="muted">{tr('no lease (single instance)')}</span>}</td>
                  <td>{i.lease_until && (until > now ? <span class="badge ok">{tr('lease held')}</span> : <span class="badge bad">{tr('expired')}</span>)}</td>
                  <td class="num">{i.sessions}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}
