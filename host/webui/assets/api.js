// api.js talks to the agent's API on this origin. The token lives in the
// tab's session storage (closed tab, no token) and goes in X-Nomad-Token,
// never in a URL.

const KEY = 'pluginhost.token';

export function token() {
  return sessionStorage.getItem(KEY) || '';
}

export function setToken(secret, type) {
  sessionStorage.setItem(KEY, secret);
  sessionStorage.setItem(KEY + '.type', type || '');
}

export function tokenType() {
  return sessionStorage.getItem(KEY + '.type') || '';
}

export function signOut() {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(KEY + '.type');
}

// APIError is a non-2xx answer: status, the agent's message and field.
export class APIError extends Error {
  constructor(status, body) {
    super((body && body.error) || 'HTTP ' + status);
    this.status = status;
    this.field = body && body.field;
  }
}

function headers(json) {
  const h = {'X-Nomad-Token': token()};
  if (json) h['Content-Type'] = 'application/json';
  return h;
}

async function check(resp) {
  if (resp.ok) return resp;
  let body = null;
  try { body = await resp.json(); } catch (e) { /* not JSON */ }
  throw new APIError(resp.status, body);
}

// get fetches a JSON answer.
export async function get(path, signal) {
  const resp = await check(await fetch(path, {headers: headers(false), signal, cache: 'no-store'}));
  return resp.json();
}

// send makes a mutating request with a JSON body, and returns the answer's
// JSON (null for none).
export async function send(method, path, body) {
  const resp = await check(await fetch(path, {method, headers: headers(true), body: JSON.stringify(body ?? {})}));
  const text = await resp.text();
  return text ? JSON.parse(text) : null;
}

// exchange swaps a one-time token for the token it stands for.
export async function exchange(secret) {
  const resp = await check(await fetch('/v1/acl/token/onetime/exchange', {
    method: 'POST', headers: {'Content-Type': 'application/json'},
    body: JSON.stringify({OneTimeSecretID: secret}),
  }));
  return (await resp.json()).Token;
}

// stream reads a streaming answer and calls onText with each decoded
// chunk until the stream or signal ends.
export async function stream(path, signal, onText) {
  const resp = await check(await fetch(path, {headers: headers(false), signal, cache: 'no-store'}));
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  for (;;) {
    const {value, done} = await reader.read();
    if (done) return;
    onText(dec.decode(value, {stream: true}));
  }
}

// events follows the agent's event stream, from the kept events after
// index `after` (null: from now on), calling onEvent for each, and
// reconnects where it left off when the stream breaks, until signal ends.
// Heartbeats are skipped.
export async function events(after, signal, onEvent, onState, topics) {
  let last = after;
  while (!signal.aborted) {
    let buf = '';
    try {
      const params = new URLSearchParams();
      if (last !== null) params.set('index', String(last));
      for (const t of topics || []) params.append('topic', t);
      const q = params.toString() ? '?' + params : '';
      onState && onState('live');
      await stream('/v1/event/stream' + q, signal, (text) => {
        buf += text;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (!line || line === '{}') continue;
          const ev = JSON.parse(line);
          if (ev.Index) last = ev.Index;
          onEvent(ev);
        }
      });
    } catch (e) {
      if (signal.aborted) return;
      if (e instanceof APIError && (e.status === 401 || e.status === 403)) {
        onState && onState('signed-out');
        return;
      }
    }
    onState && onState('reconnecting');
    await new Promise((r) => setTimeout(r, 1000));
  }
}
