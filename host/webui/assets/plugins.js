// plugins.js: CSI plugins (healthy/expected, every instance, fingerprint
// and capabilities, health over time) and plugins of other types (active
// and standby instances, reattach record).

import {h, replace, link, table, kv, badge, when, shortID} from './dom.js';
import * as api from './api.js';

const enc = encodeURIComponent;

function count(healthy, expected) {
  const ok = expected > 0 && healthy >= expected;
  return h('span', {class: 'badge ' + (ok ? 'ok' : healthy ? 'wait' : 'bad')}, healthy + '/' + expected);
}

export async function csiPluginsPage(ctx) {
  document.title = 'CSI plugins · pluginhost';
  const list = h('div', {});
  replace(ctx.main, h('h1', {}, 'CSI plugins'), list);
  await ctx.live(async () => {
    const ps = await api.get('/v1/plugins?type=csi', ctx.signal);
    ps.sort((a, b) => a.ID.localeCompare(b.ID));
    replace(list, table('', ['Plugin', 'Provider', 'Controllers', 'Nodes'],
      ps.map((p) => [link('/ui/csi/plugins/' + enc(p.ID), p.ID), p.Provider || '—',
        p.ControllerRequired || p.ControllersExpected ? count(p.ControllersHealthy, p.ControllersExpected) : 'not required',
        count(p.NodesHealthy, p.NodesExpected)]),
      'No CSI plugins. A task with a csi_plugin block makes one.'));
  }, (ev) => ev.Topic === 'Plugin' || ev.Topic === 'Registry');
}

// instances asks the registry for one CSI half's instances; a half nobody
// registered has none.
async function instances(typ, id, signal) {
  try {
    return await api.get('/v1/plugin/' + typ + '/' + enc(id), signal);
  } catch (e) {
    if (e instanceof api.APIError && e.status === 404) return null;
    throw e;
  }
}

function instanceTable(p) {
  if (!p) return h('p', {class: 'empty'}, 'None registered.');
  const rows = (p.Instances || []).map((i) => [link('/ui/allocations/' + enc(i.AllocID), h('code', {}, shortID(i.AllocID))),
    i.Active ? badge('active') : 'standby', badge(i.Healthy ? 'healthy' : 'unhealthy'), i.HealthDescription || '',
    h('code', {}, i.SocketPath || ''), when(i.RegisteredAt), String(i.BrokerLeases || 0)]);
  for (const w of p.Waiting || []) {
    rows.push([link('/ui/allocations/' + enc(w.AllocID), h('code', {}, shortID(w.AllocID))), 'not registered', badge('pending'),
      w.HealthDescription || '', '', '', '']);
  }
  return table('', ['Allocation', 'Role', 'Health', 'Why', 'Socket', 'Registered', 'Broker leases'], rows);
}

function infoBlock(title, infos, active) {
  const entries = Object.values(infos || {});
  if (!entries.length) return null;
  return h('div', {}, h('h3', {}, title), entries.map((i) => h('article', {class: 'task'},
    h('h4', {}, h('code', {}, shortID(i.AllocID)), i.AllocID === active ? ' (active)' : '', ' ', badge(i.Healthy ? 'healthy' : 'unhealthy')),
    kv([['Health', i.HealthDescription], ['Checked', when(i.UpdateTime)],
      ['Plugin capabilities', (i.Capabilities || []).join(', ') || '—'],
      i.ControllerInfo ? ['Controller capabilities', (i.ControllerInfo.Capabilities || []).join(', ') || '—'] : null,
      i.NodeInfo ? ['Node', [h('code', {}, i.NodeInfo.ID), i.NodeInfo.MaxVolumes ? ', at most ' + i.NodeInfo.MaxVolumes + ' volumes' : '']] : null,
      i.NodeInfo ? ['Node capabilities', (i.NodeInfo.Capabilities || []).join(', ') || '—'] : null,
      i.NodeInfo && i.NodeInfo.AccessibleTopology ? ['Topology', Object.entries(i.NodeInfo.AccessibleTopology).map(([k, v]) => k + '=' + v).join(', ')] : null]))));
}

export async function csiPluginPage(ctx, id) {
  document.title = id + ' · CSI plugin · pluginhost';
  const head = h('div', {});
  const inst = h('section', {'aria-labelledby': 'inst'});
  const fp = h('section', {'aria-labelledby': 'fp'});
  const hist = h('section', {'aria-labelledby': 'hist'});
  replace(ctx.main, head, inst, fp, hist);
  // Health over time: the plugin's health changes among the events the
  // agent keeps (the last 4096), then the live ones.
  const history = [];
  const drawHistory = () => replace(hist, h('h2', {id: 'hist'}, 'Health over time'),
    table('', ['When', 'Half', 'Allocation', 'Health', 'Why'], history.slice().reverse().map((e) =>
      [when(e.Time), e.Payload.PluginType, h('code', {}, shortID(e.Payload.AllocID)),
        badge(e.Payload.Plugin && e.Payload.Plugin.Healthy ? 'healthy' : 'unhealthy'), e.Payload.Message || '']),
    'No health change kept.'));
  drawHistory();
  api.events(0, ctx.signal, (ev) => {
    if (ev.Key !== id || !ev.Payload || !ev.Payload.Plugin) return;
    history.push(ev);
    if (history.length > 200) history.shift();
    drawHistory();
  }, null, ['Plugin']);
  await ctx.live(async () => {
    const [p, ctl, node] = await Promise.all([api.get('/v1/plugin/csi/' + enc(id), ctx.signal),
      instances('csi-controller', id, ctx.signal), instances('csi-node', id, ctx.signal)]);
    replace(head, h('h1', {}, 'CSI plugin ', h('span', {class: 'name'}, p.ID)),
      kv([['Provider', [p.Provider || '—', p.Version ? ' ' + p.Version : '']],
        ['Controllers', p.ControllerRequired || p.ControllersExpected ? count(p.ControllersHealthy, p.ControllersExpected) : 'not required'],
        ['Nodes', count(p.NodesHealthy, p.NodesExpected)],
        ['Volumes', link('/ui/csi/volumes?plugin=' + enc(p.ID), 'this plugin\'s volumes')]]));
    replace(inst, h('h2', {id: 'inst'}, 'Instances'), h('h3', {}, 'Controller'), instanceTable(ctl),
      h('h3', {}, 'Node'), instanceTable(node));
    replace(fp, h('h2', {id: 'fp'}, 'Fingerprint'), infoBlock('Controllers', p.Controllers, p.ActiveController),
      infoBlock('Nodes', p.Nodes, p.ActiveNode));
  }, (ev) => ev.Topic === 'Registry' || (ev.Topic === 'Plugin' && (ev.Key === id || (ev.Key && ev.Key.endsWith('/' + id)))));
}

export async function pluginsPage(ctx) {
  document.title = 'Plugins · pluginhost';
  const list = h('div', {});
  replace(ctx.main, h('h1', {}, 'Plugins of other types'),
    h('p', {}, 'go-plugin plugins a go_plugin task declares (a plugin block), reached through pluginhost:///TYPE/NAME. CSI plugins have ',
      link('/ui/csi/plugins', 'a page of their own'), '.'), list);
  await ctx.live(async () => {
    const ps = (await api.get('/v1/registry/plugins', ctx.signal)).filter((p) => !p.Type.startsWith('csi-'));
    ps.sort((a, b) => (a.Type + a.Name).localeCompare(b.Type + b.Name));
    replace(list, table('', ['Type', 'Name', 'Healthy', 'Active allocation', 'Instances', 'Socket'],
      ps.map((p) => [p.Type, link('/ui/plugins/' + enc(p.Type) + '/' + enc(p.Name), p.Name), count(p.Healthy, p.Expected),
        p.ActiveAllocID ? link('/ui/allocations/' + enc(p.ActiveAllocID), h('code', {}, shortID(p.ActiveAllocID))) : '—',
        String(p.Instances), h('code', {}, p.SocketPath || '')]),
      'No plugins of other types.'));
  }, (ev) => ev.Topic === 'Registry' || ev.Topic === 'Plugin');
}

export async function pluginPage(ctx, typ, name) {
  document.title = typ + '/' + name + ' · pluginhost';
  const head = h('div', {});
  const inst = h('section', {'aria-labelledby': 'inst'});
  const re = h('section', {'aria-labelledby': 'reattach'});
  replace(ctx.main, head, inst, re);
  await ctx.live(async () => {
    const p = await api.get('/v1/plugin/' + enc(typ) + '/' + enc(name), ctx.signal);
    replace(head, h('h1', {}, 'Plugin ', h('span', {class: 'name'}, typ + '/' + name)),
      kv([['Healthy', count(p.Healthy, p.Expected)], ['Target', h('code', {}, 'pluginhost:///' + typ + '/' + name)],
        ['Active', p.Active ? link('/ui/allocations/' + enc(p.Active.AllocID), h('code', {}, shortID(p.Active.AllocID))) : 'none']]));
    replace(inst, h('h2', {id: 'inst'}, 'Instances'), instanceTable(p));
    if (!ctx.canWrite()) {
      replace(re, h('h2', {id: 'reattach'}, 'Reattach record'), h('p', {class: 'empty'}, 'Needs the management token.'));
      return;
    }
    let rec = null;
    try {
      rec = await api.get('/v1/plugin/' + enc(typ) + '/' + enc(name) + '/reattach', ctx.signal);
    } catch (e) {
      if (!(e instanceof api.APIError) || (e.status !== 404 && e.status !== 503)) throw e;
    }
    replace(re, h('h2', {id: 'reattach'}, 'Reattach record'),
      rec ? h('pre', {class: 'json'}, JSON.stringify(rec, null, 2)) : h('p', {class: 'empty'}, 'No active instance.'));
  }, (ev) => ev.Topic === 'Registry' || (ev.Topic === 'Plugin' && ev.Key === typ + '/' + name));
}
