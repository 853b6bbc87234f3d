/** A small line chart in SVG (elements and presentation attributes only: no style, no markup). */
const SVG = 'http://www.w3.org/2000/svg';

function el(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

/**
 * `points` oldest first. The chart is an image with a title and a description that says the
 * numbers in words (what a screen reader reads), the line drawn over a zero baseline.
 */
export function lineChart(points: Array<{ label: string; value: number }>, opts: { title: string; unit: string; width?: number; height?: number }): SVGElement {
  const width = opts.width ?? 480;
  const height = opts.height ?? 140;
  const pad = { left: 44, right: 10, top: 12, bottom: 24 };
  const max = Math.max(1, ...points.map((p) => p.value));
  const x = (i: number) => pad.left + (points.length <= 1 ? 0 : (i * (width - pad.left - pad.right)) / (points.length - 1));
  const y = (v: number) => height - pad.bottom - (v / max) * (height - pad.top - pad.bottom);
  const last = points[points.length - 1];
  const svg = el('svg', { viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-labelledby': 'chart-title chart-desc', class: 'chart' });
  svg.appendChild(el('title', { id: 'chart-title' }, opts.title));
  svg.appendChild(el('desc', { id: 'chart-desc' }, points.length === 0 ? 'No data.'
    : `${points.length} points from ${points[0].label} to ${last.label}; highest ${format(max)} ${opts.unit}, latest ${format(last.value)} ${opts.unit}.`));
  svg.appendChild(el('line', { x1: pad.left, y1: y(0), x2: width - pad.right, y2: y(0), stroke: '#8c959f', 'stroke-width': 1 }));
  svg.appendChild(el('text', { x: pad.left - 6, y: y(max) + 4, 'text-anchor': 'end', 'font-size': 11, fill: '#57606a' }, format(max)));
  svg.appendChild(el('text', { x: pad.left - 6, y: y(0) + 4, 'text-anchor': 'end', 'font-size': 11, fill: '#57606a' }, '0'));
  if (points.length > 0) {
    svg.appendChild(el('text', { x: pad.left, y: height - 6, 'font-size': 11, fill: '#57606a' }, points[0].label));
    svg.appendChild(el('text', { x: width - pad.right, y: height - 6, 'text-anchor': 'end', 'font-size': 11, fill: '#57606a' }, last.label));
    const path = points.map((p, i) => `${i === 0 ? 'M' : 'L'}${x(i).toFixed(1)},${y(p.value).toFixed(1)}`).join(' ');
    svg.appendChild(el('path', { d: path, fill: 'none', stroke: '#0a58ca', 'stroke-width': 2 }));
    points.forEach((p, i) => svg.appendChild(el('circle', { cx: x(i), cy: y(p.value), r: 2.5, fill: '#0a58ca' })));
  }
  return svg;
}

const format = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en') : n.toFixed(n >= 10 ? 1 : 2));
