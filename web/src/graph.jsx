import { Badge } from './ui.jsx';
import { t as tr } from './i18n.jsx';

// graphOf reads a task's graph from its trace: a NODE event opens or
// updates a node, SUSPEND/RESUME change its status, and a delegated node
// ("<parent>.d<n>") hangs under the node that delegated it.
export function graphOf(events) {
  const nodes = new Map();
  for (const e of events) {
    if (e.kind === 'TASK' && (e.status === 'FAILED' || e.status === 'CANCELLED')) {
      // The task ended: a node it left running ended with it.
      for (const n of nodes.values()) if (n.status === 'RUNNING' || n.status === 'SUSPENDED') n.status = e.status;
      continue;
    }
    if (!e.node) continue;
    let n = nodes.get(e.node);
    if (!n) {
      n = { id: e.node, status: 'RUNNING', objective: '', tools: 0 };
      nodes.set(e.node, n);
    }
    if (e.kind === 'NODE') {
      if (e.status) n.status = e.status;
      if (!n.objective && e.message) n.objective = e.message;
    } else if (e.kind === 'SUSPEND') {
      n.status = 'SUSPENDED';
    } else if (e.kind === 'RESUME') {
      n.status = 'RUNNING';
    } else if (e.kind === 'TOOL') {
      n.tools++;
    }
  }
  const edges = [];
  for (const n of nodes.values()) {
    const m = /^(.*)\.d\d+$/.exec(n.id);
    if (m && nodes.has(m[1])) edges.push({ from: m[1], to: n.id });
  }
  return { nodes: [...nodes.values()], edges };
}

const W = 190;
const H = 54;
const GX = 40;
const GY = 36;

// TaskGraph draws the nodes as boxes in columns by delegation depth, with
// an arrow from each node to the node it delegated to.
export function TaskGraph({ events, task }) {
  const { nodes, edges } = graphOf(events);
  if (!nodes.length) return <p class="muted">{tr('No nodes yet.')}</p>;
  const parent = new Map(edges.map((e) => [e.to, e.from]));
  const depth = (id) => (parent.has(id) ? 1 + depth(parent.get(id)) : 0);
  const rows = new Map();
  const pos = new Map();
  for (const n of nodes) {
    const d = depth(n.id);
    const r = rows.get(d) || 0;
    rows.set(d, r + 1);
    pos.set(n.id, { x: 10 + d * (W + GX), y: 10 + r * (H + GY) });
  }
  const width = 20 + Math.max(...[...rows.keys()].map((d) => (d + 1) * (W + GX))) - GX;
  const height = 20 + Math.max(...rows.values()) * (H + GY) - GY;
  return (
    <figure class="graph">
      <svg viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="img"
        aria-label={tr('Task {t} graph: ', { t: task }) + nodes.map((n) => `${n.id} ${n.status}`).join(', ')}>
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M0,0 L10,5 L0,10 z" class="edge-head" />
          </marker>
        </defs>
        {edges.map((e) => {
          const a = pos.get(e.from);
          const b = pos.get(e.to);
          return <path class="edge" marker-end="url(#arrow)"
            d={`M${a.x + W},${a.y + H / 2} C${a.x + W + GX / 2},${a.y + H / 2} ${b.x - GX / 2},${b.y + H / 2} ${b.x},${b.y + H / 2}`} />;
        })}
        {nodes.map((n) => {
          const p = pos.get(n.id);
          return (
            <g class={'node s-' + n.status} transform={`translate(${p.x},${p.y})`}>
              <title>{n.id + ': ' + n.objective}</title>
              <rect width={W} height={H} rx="8" />
              <text x="10" y="21" class="node-id">{n.id.replace(/^t\d+\./, '')}</text>
              <text x="10" y="41" class="node-status">{n.status} · {tr(n.tools === 1 ? '{n} call' : '{n} calls', { n: n.tools })}</text>
            </g>
          );
        })}
      </svg>
      <figcaption class="muted small">
        {nodes.map((n) => <span class="legend"><code>{n.id}</code> <Badge value={n.status} /></span>)}
      </figcaption>
    </figure>
  );
}
