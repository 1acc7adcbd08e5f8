import { get } from './api.js';
import { ErrorNote, Loading, When, useLoad } from './ui.jsx';

// Instances lists the warden serve instances sharing the session
// directory, the lease each holds and the sessions it serves.
export function Instances() {
  const { data, error, loading, reload } = useLoad(() => get('/admin/v1/instances'), []);
  const list = data?.instances || [];
  const now = Date.now();
  return (
    <section aria-labelledby="h-instances">
      <div class="bar">
        <h1 id="h-instances">Instances</h1>
        <button type="button" onClick={reload}>Refresh</button>
      </div>
      <ErrorNote error={error} />
      <Loading when={loading && !data} />
      {data && (
        <table class="list">
          <caption class="sr">Instances and their leases</caption>
          <thead><tr><th scope="col">Instance</th><th scope="col">Lease until</th><th scope="col">Lease</th><th scope="col">Sessions</th></tr></thead>
          <tbody>
            {list.map((i) => {
              const until = i.lease_until ? Date.parse(i.lease_until) : 0;
              return (
                <tr>
                  <td><code>{i.id}</code>{i.self && <span class="badge run">this instance</span>}</td>
                  <td>{i.lease_until ? <When t={i.lease_until} /> : <span class="muted">no lease (single instance)</span>}</td>
                  <td>{i.lease_until && (until > now ? <span class="badge ok">held</span> : <span class="badge bad">expired</span>)}</td>
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
