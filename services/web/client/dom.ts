/**
 * Building the page: every value becomes a text node or an attribute, never markup (no innerHTML
 * anywhere), so a name like `<img src=x onerror=alert(1)>` shows as those characters.
 */
export type Child = Node | string | number | null | undefined | false | Child[];
type Handler = (event: Event) => void;
export type Props = Record<string, string | number | boolean | null | undefined | Handler>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props | null = null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === 'function') el.addEventListener(name.replace(/^on/, '').toLowerCase(), value);
    else if (name === 'value' && 'value' in el) (el as HTMLInputElement).value = String(value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else parent.appendChild(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child);
  }
}

/** Replaces what `parent` holds. */
export function replace(parent: Node, ...children: Child[]): void {
  while (parent.firstChild) parent.removeChild(parent.firstChild);
  append(parent, children);
}

/** A number as people read it here (1,351,325). */
export const count = (n: number): string => n.toLocaleString('en');

export function bytes(n: number): string {
  if (typeof n !== 'number' || !Number.isFinite(n)) return '—';
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n;
  let unit = -1;
  while (v >= 1024 && unit < units.length - 1) {
    v /= 1024;
    unit++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[unit]}`;
}

export const when = (iso: string | null | undefined): string => (iso ? new Date(iso).toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'short' }) : '—');

/** A progress bar with its value said in words too (screen readers read the label). */
export function progressBar(label: string, percent: number): HTMLElement {
  const value = Math.max(0, Math.min(100, Math.round(percent)));
  return h('div', { class: 'progress' },
    h('progress', { max: 100, value, 'aria-label': label }),
    h('span', { class: 'progress-value' }, `${value} %`));
}
