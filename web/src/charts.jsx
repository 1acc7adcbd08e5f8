import { t as tr } from './i18n.jsx';

// Small SVG charts: no chart library, text labels beside every colour.

// Bar is one stacked horizontal bar of counts.
export function Bar({ parts, label, width = 160 }) {
  const total = parts.reduce((n, p) => n + p.n, 0);
  let x = 0;
  return (
    <svg class="bar-chart" width={width} height="12" role="img" aria-label={label}>
      <rect width={width} height="12" rx="3" class="track" />
      {total > 0 && parts.map((p) => {
        const w = (p.n / total) * width;
        const r = <rect x={x} width={w} height="12" class={'fill ' + p.cls}><title>{p.n}</title></rect>;
        x += w;
        return r;
      })}
    </svg>
  );
}

// Histogram draws a latency histogram: one bar per bucket, labelled by its
// upper bound in milliseconds (the last bucket is everything above).
export function Histogram({ bounds, counts, label }) {
  if (!counts?.length) return <p class="muted small">{tr('No calls yet.')}</p>;
  const max = Math.max(1, ...counts);
  // Without bounds (an older server) the buckets are only numbered.
  const name = (i) => (!bounds.length ? '#' + (i + 1) : i < bounds.length ? '≤' + fmt(bounds[i]) : '>' + fmt(bounds[bounds.length - 1]));
  // Each bar is as wide as its widest label (bucket or count), so that
  // neighbouring labels never overlap.
  const bw = Math.max(36, ...counts.map((c, i) => textWidth(Math.max(name(i).length, String(c).length)) + 8));
  const h = 90;
  const axis = bounds.length ? 'latency, ms' : 'latency bucket';
  const width = Math.max(counts.length * bw + 10, textWidth(axis.length) + 10);
  return (
    <svg class="histogram" width={width} height={h + 34} viewBox={`0 0 ${width} ${h + 34}`} role="img" aria-label={label + ': ' + counts.map((c, i) => `${name(i)} ms ${c}`).join(', ')}>
      {counts.map((c, i) => {
        const bh = (c / max) * h;
        return (
          <g transform={`translate(${5 + i * bw},0)`}>
            <rect y={h - bh} width={bw - 4} height={Math.max(bh, c ? 1 : 0)} class="fill run"><title>{`${name(i)} ms: ${c}`}</title></rect>
            {c > 0 && <text x={(bw - 4) / 2} y={Math.max(h - bh - 3, 9)} class="count">{c}</text>}
            <text x={(bw - 4) / 2} y={h + 12} class="tick">{name(i)}</text>
          </g>
        );
      })}
      <text x="5" y={h + 28} class="tick axis">{axis}</text>
    </svg>
  );
}

// textWidth is the width in px of n characters of the charts' 10 px
// labels, rounded up (a digit is about 6 px wide).
function textWidth(n) {
  return Math.ceil(n * 6.2);
}

function fmt(ms) {
  if (ms >= 1000) return ms / 1000 + 's';
  if (ms < 1) return String(+ms.toPrecision(2));
  return String(+ms.toPrecision(3));
}

// Columns is one bar per labelled value, e.g. a metric per generation.
export function Columns({ items, label, unit = '' }) {
  if (!items.length) return null;
  const max = Math.max(1e-9, ...items.map((i) => i.value));
  // Each column is as wide as its widest label; the axis label fits too.
  const bw = Math.max(54, ...items.map((it) => textWidth(Math.max(it.name.length, String(it.text ?? it.value).length)) + 12));
  const h = 80;
  const width = Math.max(items.length * bw + 10, textWidth(label.length) + 10);
  return (
    <svg class="columns" width={width} height={h + 34} viewBox={`0 0 ${width} ${h + 34}`} role="img"
      aria-label={label + ': ' + items.map((i) => `${i.name} ${i.text ?? i.value}${unit}`).join(', ')}>
      {items.map((it, k) => {
        const bh = (it.value / max) * h;
        return (
          <g transform={`translate(${5 + k * bw},0)`}>
            <rect y={h - bh} width={bw - 10} height={bh} class={'fill ' + (it.cls || 'run')}><title>{`${it.name}: ${it.text ?? it.value}${unit}`}</title></rect>
            <text x={(bw - 10) / 2} y={Math.max(h - bh - 3, 9)} class="count">{it.text ?? it.value}</text>
            <text x={(bw - 10) / 2} y={h + 14} class="tick">{it.name}</text>
          </g>
        );
      })}
      <text x="5" y={h + 30} class="tick axis">{label}</text>
    </svg>
  );
}
