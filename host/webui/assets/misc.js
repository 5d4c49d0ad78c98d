// misc.js: the live event stream, the agent's page and the sign-in page.

import {h, on, replace, link, table, kv, badge, when, shortID} from './dom.js';
import * as api from './api.js';
import {signedIn, signedOut} from './app.js';

const enc = encodeURIComponent;
const TOPICS = ['Allocation', 'Task', 'Job', 'Plugin', 'Registry', 'Agent', 'Volume'];
const KEEP = 500; // events kept on the page

function describe(ev) {
  const p = ev.Payload || {};
  if (p.TaskEvent) return p.TaskName + ': ' + p.TaskEvent.Type + (p.TaskEvent.DisplayMessage ? ': ' + p.TaskEvent.DisplayMessage : '');
  if (p.Allocation) return p.Allocation.JobID + '/' + p.Allocation.TaskGroup + ': ' + p.Allocation.ClientStatus;
  if (p.Plugin) return (p.Plugin.Healthy ? 'healthy' : 'unhealthy') + (p.Plugin.HealthDescription ? ' (' + p.Plugin.HealthDescription + ')' : '');
  return p.Message || '';
}

function keyLink(ev) {
  const p = ev.Payload || {};
  if (p.AllocID) return link('/ui/allocations/' + enc(p.AllocID), h('code', {}, shortID(p.AllocID)));
  if (ev.Topic === 'Job') return link('/ui/jobs/' + enc(ev.Key), ev.Key);
  if (ev.Topic === 'Volume') return link('/ui/csi/volumes/' + enc(ev.Key), ev.Key);
  return ev.Key || '';
}

export async function eventsPage(ctx) {
  document.title = 'Events · pluginhost';
  const topic = h('select', {id: 'f-topic'}, h('option', {value: ''}, 'every topic'), TOPICS.map((t) => h('option', {value: t}, t)));
  const job = h('input', {id: 'f-job', type: 'search', placeholder: 'job ID'});
  const alloc = h('input', {id: 'f-alloc', type: 'search', placeholder: 'allocation ID prefix'});
  const rows = h('tbody', {});
  const state = h('span', {class: 'stream-state'});
  replace(ctx.main, h('h1', {}, 'Events ', state),
    h('form', {class: 'filters', role: 'search'},
      h('label', {for: 'f-topic'}, 'Topic '), topic, ' ', h('label', {for: 'f-job'}, 'Job '), job, ' ',
      h('label', {for: 'f-alloc'}, 'Allocation '), alloc),
    h('table', {class: 'events'}, h('thead', {}, h('tr', {}, ['Index', 'When', 'Topic', 'Type', 'Key', 'Details'].map((c) => h('th', {scope: 'col'}, c)))), rows));
  const seen = [];
  const matches = (ev) => (!topic.value || ev.Topic === topic.value) &&
    (!job.value || ev.Key === job.value || (ev.Payload && ev.Payload.JobID === job.value) ||
      (ev.Payload && ev.Payload.Allocation && ev.Payload.Allocation.JobID === job.value)) &&
    (!alloc.value || ((ev.Payload && ev.Payload.AllocID) || '').startsWith(alloc.value));
  const row = (ev) => h('tr', {}, h('td', {}, String(ev.Index)), h('td', {}, when(ev.Time)), h('td', {}, ev.Topic),
    h('td', {}, ev.Type), h('td', {}, keyLink(ev)), h('td', {}, describe(ev)));
  const redraw = () => replace(rows, seen.filter(matches).slice().reverse().map(row));
  for (const el of [topic, job, alloc]) on(el, 'input', redraw);
  on(ctx.main.querySelector('form'), 'submit', (e) => e.preventDefault());
  const self = await api.get('/v1/agent/self', ctx.signal);
  // The last 100 events, then the live ones, on a stream of its own.
  api.events(Math.max(0, (self.EventIndex || 0) - 100), ctx.signal, (ev) => {
    seen.push(ev);
    if (seen.length > KEEP) seen.shift();
    if (matches(ev)) rows.prepend(row(ev));
    while (rows.childElementCount > KEEP) rows.lastElementChild.remove();
  }, (st) => { state.textContent = st === 'live' ? '(live)' : '(' + st + ')'; });
}

export async function agentPage(ctx) {
  document.title = 'Agent · pluginhost';
  const body = h('div', {});
  replace(ctx.main, h('h1', {}, 'Agent'), body);
  await ctx.live(async () => {
    const a = await api.get('/v1/agent/self', ctx.signal);
    const c = a.Containment || {};
    replace(body, kv([['Version', a.Version], ['Node', a.NodeName], ['Ready', a.Ready ? badge('ready') : badge('pending')],
      ['Started', when(a.StartTime)], ['Data dir', h('code', {}, a.DataDir)], ['API', h('code', {}, a.Addr)],
      ['UI', h('code', {}, location.origin + '/ui/')],
      ['Containment', c.CgroupVersion ? 'cgroup v' + c.CgroupVersion + ' under ' + c.CgroupParent + ' (' + (c.Controllers || []).join(', ') + ')'
        : 'none: ' + (c.Reason || 'resources are not enforced')],
      ['Signed in as', api.tokenType() || 'unknown'], ['Events so far', String(a.EventIndex || 0)]]));
  }, (ev) => ev.Topic === 'Agent');
}

export async function signinPage(ctx) {
  document.title = 'Sign in · pluginhost';
  const next = new URLSearchParams(location.search).get('next') || '/ui/jobs';
  const input = h('input', {id: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true});
  const msg = h('p', {role: 'status'});
  const form = h('form', {class: 'signin'},
    h('label', {for: 'token'}, 'Token'), ' ', input, ' ', h('button', {type: 'submit'}, 'Sign in'));
  const out = h('button', {type: 'button'}, 'Sign out');
  replace(ctx.main, h('h1', {}, 'Sign in'),
    api.token() ? h('p', {}, 'Signed in with the ', h('strong', {}, api.tokenType() || 'a'), ' token. ', on(out, 'click', () => {
      signedOut();
      ctx.navigate('/ui/settings/tokens', true);
    })) : h('p', {}, 'Paste the management or the read token (pluginhost operator token shows them), or run ',
      h('code', {}, 'pluginhost ui -authenticate'), ', which signs this browser in with a one-time token.'),
    form, msg,
    h('p', {class: 'note'}, 'The token stays in this tab only (session storage) and goes to the agent in a header, never in a URL.'));
  on(form, 'submit', async (e) => {
    e.preventDefault();
    const secret = input.value.trim();
    api.setToken(secret, '');
    try {
      await api.get('/v1/agent/self');
      let type = 'read';
      try {
        await api.get('/v1/acl/tokens');
        type = 'management';
      } catch (err) { /* the read token may not list tokens */ }
      api.setToken(secret, type);
      signedIn();
      ctx.navigate(next.startsWith('/ui/') ? next : '/ui/jobs', true);
    } catch (err) {
      api.signOut();
      msg.textContent = 'Not signed in: ' + err.message;
    }
  });
  input.focus();
}
