// app.js is the UI's frame: sign-in, the router, and the one event stream
// every page follows. Pages are functions (page(ctx, ...params)) that draw
// into ctx.main and may return {onEvent(ev), dispose()}.

import {h, on, replace} from './dom.js';
import * as api from './api.js';
import {jobsPage, jobPage} from './jobs.js';
import {allocPage, logsPage} from './allocs.js';
import {csiPluginsPage, csiPluginPage, pluginsPage, pluginPage} from './plugins.js';
import {volumesPage, volumePage} from './volumes.js';
import {eventsPage, agentPage, signinPage} from './misc.js';

const routes = [
  [/^\/ui\/?$/, (ctx) => ctx.navigate('/ui/jobs', true)],
  [/^\/ui\/jobs\/?$/, jobsPage],
  [/^\/ui\/jobs\/([^/]+)$/, jobPage],
  [/^\/ui\/allocations\/([^/]+)$/, allocPage],
  [/^\/ui\/allocations\/([^/]+)\/([^/]+)\/logs$/, logsPage],
  [/^\/ui\/csi\/plugins\/?$/, csiPluginsPage],
  [/^\/ui\/csi\/plugins\/([^/]+)$/, csiPluginPage],
  [/^\/ui\/csi\/volumes\/?$/, volumesPage],
  [/^\/ui\/csi\/volumes\/([^/]+)$/, volumePage],
  [/^\/ui\/plugins\/?$/, pluginsPage],
  [/^\/ui\/plugins\/([^/]+)\/([^/]+)$/, pluginPage],
  [/^\/ui\/events\/?$/, eventsPage],
  [/^\/ui\/agent\/?$/, agentPage],
  [/^\/ui\/settings\/tokens\/?$/, signinPage],
];

const main = document.getElementById('main');
const statusEl = document.getElementById('status');
let current = null; // the page on screen: {abort, onEvent, dispose}
let streamAbort = null;

let statusTimer = null;

// setStatus shows a short message for a few seconds.
function setStatus(msg) {
  statusEl.textContent = msg || '';
  clearTimeout(statusTimer);
  if (msg) statusTimer = setTimeout(() => { statusEl.textContent = ''; }, 4000);
}

// navigate shows path; replace keeps the history entry.
function navigate(path, replaceEntry) {
  if (replaceEntry) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  render();
}

function canWrite() {
  return api.tokenType() === 'management';
}

// live loads a page's data now and again whenever an event it cares about
// arrives (match): the screen follows the agent without a reload. A burst
// of events is one load, 20 ms after the first of them, and a load asked
// for while one runs runs once after it.
function live(ctx, load, match) {
  let running = false;
  let again = false;
  const run = async () => {
    if (running) { again = true; return; }
    running = true;
    try {
      await load();
      ctx.error(null);
    } catch (e) {
      if (!ctx.signal.aborted) ctx.error(e);
    } finally {
      running = false;
      if (again && !ctx.signal.aborted) { again = false; run(); }
    }
  };
  let timer = null;
  const soon = () => {
    if (timer) return;
    timer = setTimeout(() => { timer = null; run(); }, 20);
  };
  ctx.listeners.push((ev) => { if (match(ev)) soon(); });
  return run();
}

function render() {
  if (current) {
    current.abort.abort();
    current.dispose && current.dispose();
    current = null;
  }
  const path = location.pathname;
  if (!api.token() && !path.startsWith('/ui/settings/tokens')) {
    history.replaceState(null, '', '/ui/settings/tokens?next=' + encodeURIComponent(path));
    return render();
  }
  markNav(path);
  const abort = new AbortController();
  const errBox = h('div', {class: 'error', role: 'alert', hidden: true});
  const body = h('div', {class: 'page'});
  replace(main, errBox, body);
  const ctx = {
    main: body, signal: abort.signal, navigate, canWrite, setStatus, listeners: [],
    error(e) {
      if (!e) { errBox.hidden = true; errBox.replaceChildren(); return; }
      if (e instanceof api.APIError && (e.status === 401 || e.status === 403) && e.field === 'X-Nomad-Token') {
        api.signOut();
        navigate('/ui/settings/tokens?next=' + encodeURIComponent(location.pathname), true);
        return;
      }
      replace(errBox, String(e.message || e));
      errBox.hidden = false;
    },
    live(load, match) { return live(ctx, load, match); },
  };
  current = {abort, onEvent: (ev) => ctx.listeners.forEach((f) => f(ev))};
  for (const [re, page] of routes) {
    const m = path.match(re);
    if (!m) continue;
    Promise.resolve(page(ctx, ...m.slice(1).map(decodeURIComponent)))
      .then((r) => { if (r && current && current.abort === abort) current.dispose = r.dispose; })
      .catch((e) => ctx.error(e));
    main.focus({preventScroll: true});
    return;
  }
  replace(body, h('h1', {}, 'Not found'), h('p', {}, 'No page at ' + path + '.'));
}

function markNav(path) {
  for (const a of document.querySelectorAll('header nav a')) {
    const here = path === a.pathname || path.startsWith(a.pathname + '/');
    if (here) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const who = document.getElementById('signin');
  who.textContent = api.token() ? (api.tokenType() || 'signed in') : 'Sign in';
}

// startEvents follows the agent's events for the whole session and hands
// each to the page on screen.
function startEvents() {
  if (streamAbort || !api.token()) return;
  streamAbort = new AbortController();
  api.events(null, streamAbort.signal, (ev) => current && current.onEvent(ev), (state) => {
    document.body.dataset.stream = state;
    if (state === 'signed-out') { streamAbort = null; }
  });
}

export function signedIn() {
  startEvents();
}

export function signedOut() {
  if (streamAbort) { streamAbort.abort(); streamAbort = null; }
  api.signOut();
}

// In-app links: the router takes plain left clicks on /ui/ links.
on(document, 'click', (e) => {
  const a = e.target.closest && e.target.closest('a');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  if (a.origin !== location.origin || !a.pathname.startsWith('/ui/') || a.target) return;
  e.preventDefault();
  navigate(a.pathname + a.search);
});
on(window, 'popstate', render);

// A one-time token in the fragment (pluginhost ui -authenticate) is
// exchanged once, then dropped from the address bar and the history.
async function start() {
  const m = location.hash.match(/^#ott=([0-9a-f]+)$/);
  if (m) {
    history.replaceState(null, '', location.pathname + location.search);
    try {
      const tok = await api.exchange(m[1]);
      api.setToken(tok.SecretID, tok.Type);
      setStatus('Signed in with a one-time token (' + tok.Type + ').');
    } catch (e) {
      setStatus('The one-time token was refused: ' + e.message);
    }
  }
  if (api.token()) startEvents();
  render();
}

start();
