// dom.js builds the page with DOM calls only. Nothing here, or anywhere in
// the UI, parses a string as markup (webui_test.go checks): what a job, a
// task or a plugin says goes in as a text node, so a task that logs
// <script> shows that text.

// h makes an element: h('a', {href: '/ui/jobs', class: 'x'}, 'text', child).
// Attributes named on* are refused: handlers are attached with on().
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG = 'http://www.w3.org/2000/svg';

// s makes an SVG element, as h does.
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) throw new Error('use on() for ' + k);
    el.setAttribute(k, v === true ? '' : String(v));
  }
}

// append adds children: strings become text nodes, arrays are flattened,
// null and undefined are skipped.
export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// on attaches a listener and returns el, for chaining inside h() calls.
export function on(el, type, fn) {
  el.addEventListener(type, fn);
  return el;
}

// replace empties el and puts children in it.
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// link is an in-app link (the router takes the click).
export function link(href, ...children) {
  return h('a', {href}, ...children);
}

// table renders rows under a header; each row is an array of cells.
export function table(caption, headers, rows, empty = 'None') {
  if (!rows.length) return h('p', {class: 'empty'}, empty);
  return h('table', {},
    caption ? h('caption', {}, caption) : null,
    h('thead', {}, h('tr', {}, headers.map((c) => h('th', {scope: 'col'}, c)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c) => h('td', {}, c))))));
}

// kv renders a definition list of [label, value] pairs.
export function kv(pairs) {
  return h('dl', {class: 'kv'}, pairs.filter(Boolean).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v ?? '—')]));
}

// badge shows a status word with its colour class.
export function badge(word) {
  return h('span', {class: 'badge ' + statusClass(word)}, word || 'unknown');
}

export function statusClass(word) {
  switch (word) {
    case 'running': case 'healthy': case 'ready': case 'successful': case 'published': case 'complete':
      return 'ok';
    case 'pending': case 'starting': case 'queued':
      return 'wait';
    case 'failed': case 'dead': case 'lost': case 'unhealthy':
      return 'bad';
  }
  return 'plain';
}

// shortID is an allocation ID's first 8 characters, as the CLI shows it.
export function shortID(id) {
  return (id || '').slice(0, 8);
}

// ago says how long before now a time was: "3s ago", "4m ago".
export function ago(t) {
  const ms = typeof t === 'number' ? t / 1e6 : Date.parse(t);
  if (!ms || ms < 0) return 'never';
  const d = Math.max(0, (Date.now() - ms) / 1000);
  if (d < 1) return 'just now';
  if (d < 60) return Math.floor(d) + 's ago';
  if (d < 3600) return Math.floor(d / 60) + 'm ago';
  if (d < 172800) return Math.floor(d / 3600) + 'h ago';
  return Math.floor(d / 86400) + 'd ago';
}

// when renders a time as <time> with the absolute date on hover.
export function when(t) {
  const ms = typeof t === 'number' ? t / 1e6 : Date.parse(t);
  if (!ms) return 'never';
  const iso = new Date(ms).toISOString();
  return h('time', {datetime: iso, title: iso}, ago(t));
}

// bytes is a human size: 1.5 MiB.
export function bytes(n) {
  if (n === undefined || n === null) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + ' ' + units[i];
}

// debounce runs fn at most once per wait, after the last call.
export function debounce(fn, wait) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), wait);
  };
}
