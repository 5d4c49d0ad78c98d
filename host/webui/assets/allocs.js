// allocs.js: an allocation's page (tasks, their events as a timeline,
// memory and CPU over time with OOM kills marked, volumes) and a task's
// logs, followed live.

import {h, s, on, replace, link, table, kv, badge, when, shortID, bytes} from './dom.js';
import * as api from './api.js';

const enc = encodeURIComponent;
const SAMPLES = 90; // two-second samples: three minutes on the charts

export async function allocPage(ctx, id) {
  const head = h('div', {});
  const tasksEl = h('section', {'aria-labelledby': 'tasks'});
  const chartsEl = h('section', {'aria-labelledby': 'usage'});
  const volsEl = h('section', {'aria-labelledby': 'vols'});
  replace(ctx.main, head, tasksEl, chartsEl, volsEl);
  document.title = 'Allocation ' + shortID(id) + ' · pluginhost';
  const series = {}; // task -> [{t, mem, cpu}]
  let alloc = null;

  const drawCharts = () => {
    if (!alloc) return;
    const tasks = alloc.Tasks || Object.keys(alloc.TaskStates || {});
    replace(chartsEl, h('h2', {id: 'usage'}, 'Memory and CPU'),
      tasks.map((t) => taskCharts(t, series[t] || [], alloc.TaskResources && alloc.TaskResources[t],
        oomTimes(alloc.TaskStates && alloc.TaskStates[t]))));
  };

  await ctx.live(async () => {
    alloc = await api.get('/v1/allocation/' + enc(id), ctx.signal);
    replace(head,
      h('h1', {}, 'Allocation ', h('code', {}, shortID(alloc.ID)), ' ', badge(alloc.ClientStatus)),
      kv([['Job', link('/ui/jobs/' + enc(alloc.JobID), alloc.JobID)], ['Version', String(alloc.JobVersion)],
        ['Group', alloc.TaskGroup], ['Desired', [alloc.DesiredStatus, alloc.DesiredDescription ? ' (' + alloc.DesiredDescription + ')' : '']],
        ['Client', alloc.ClientDescription || alloc.ClientStatus], ['Created', when(alloc.CreateTime)], ['ID', h('code', {}, alloc.ID)]]));
    const names = alloc.Tasks || Object.keys(alloc.TaskStates || {}).sort();
    replace(tasksEl, h('h2', {id: 'tasks'}, 'Tasks'), names.map((t) => taskBlock(alloc, t)));
    replace(volsEl, h('h2', {id: 'vols'}, 'Volumes'), table('', ['Volume', 'ID', 'Mode', 'Claim step', 'Desired'],
      (alloc.Volumes || []).map((v) => [v.Name, link('/ui/csi/volumes/' + enc(v.VolumeID), v.VolumeID), v.ReadOnly ? 'read' : 'write',
        v.Claim ? [badge(v.Claim.State), ' ', v.Claim.StateDescription || ''] : '—', v.Claim ? v.Claim.Desired : '—']),
      'No volumes.'));
    drawCharts();
  }, (ev) => ev.Key === id || (ev.Payload && ev.Payload.AllocID === id));

  // Usage is sampled while the page is open, as Nomad's UI does.
  const poll = async () => {
    try {
      const u = await api.get('/v1/client/allocation/' + enc(id) + '/stats', ctx.signal);
      for (const [t, tu] of Object.entries(u.Tasks || {})) {
        const r = tu.ResourceUsage || {};
        const arr = (series[t] ||= []);
        arr.push({t: tu.Timestamp / 1e6, mem: r.MemoryStats ? r.MemoryStats.RSS : 0, cpu: r.CpuStats ? r.CpuStats.TotalTicks : 0});
        if (arr.length > SAMPLES) arr.shift();
      }
      drawCharts();
    } catch (e) { /* a dead allocation has no stats */ }
  };
  poll();
  const timer = setInterval(poll, 2000);
  return {dispose: () => clearInterval(timer)};
}

function taskBlock(alloc, name) {
  const ts = (alloc.TaskStates || {})[name] || {};
  const base = '/ui/allocations/' + enc(alloc.ID) + '/' + enc(name) + '/logs';
  const events = (ts.Events || []).slice().reverse();
  return h('article', {class: 'task'},
    h('h3', {}, name, ' ', badge(ts.State), ts.Failed ? [' ', badge('failed')] : null),
    kv([['Restarts', String(ts.Restarts || 0)], ['Started', when(ts.StartedAt)], ['Finished', ts.FinishedAt && !ts.FinishedAt.startsWith('0001') ? when(ts.FinishedAt) : '—'],
      ['Logs', [link(base, 'stdout'), ' ', link(base + '?type=stderr', 'stderr')]]]),
    h('ol', {class: 'timeline', 'aria-label': 'Events of ' + name}, events.map((e) => h('li', {class: isOOM(e) ? 'oom' : null},
      when(e.Time), ' ', h('strong', {}, e.Type), e.DisplayMessage ? ': ' + e.DisplayMessage : ''))));
}

function isOOM(e) {
  return (e.DisplayMessage || '').includes('OOM Killed') || (e.Details && e.Details.oom_killed === 'true');
}

function oomTimes(ts) {
  return ((ts && ts.Events) || []).filter(isOOM).map((e) => e.Time / 1e6);
}

// taskCharts draws a task's memory (RSS against its limit) and CPU (MHz)
// as SVG lines over the sampled window, an OOM kill as a red mark.
function taskCharts(task, pts, res, ooms) {
  const memLimit = res ? (res.MemoryMaxMB || res.MemoryMB) * 1024 * 1024 : 0;
  const last = pts[pts.length - 1];
  return h('figure', {class: 'charts'},
    h('figcaption', {}, task + ': memory ', last ? bytes(last.mem) : '—', memLimit ? ' of ' + bytes(memLimit) : '',
      ', CPU ', last ? Math.round(last.cpu) + ' MHz' : '—', res ? ' of ' + res.CPU : ''),
    chart('Memory of ' + task, pts.map((p) => [p.t, p.mem]), memLimit, ooms),
    chart('CPU of ' + task, pts.map((p) => [p.t, p.cpu]), res ? res.CPU : 0, ooms));
}

function chart(label, pts, limit, marks) {
  const W = 300;
  const H = 80;
  const svg = s('svg', {viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img', 'aria-label': label, class: 'chart'});
  if (pts.length < 2) {
    svg.append(s('text', {x: 8, y: H / 2}, 'sampling…'));
    return svg;
  }
  const t0 = pts[0][0];
  const t1 = Math.max(pts[pts.length - 1][0], t0 + 1);
  const top = Math.max(limit || 0, ...pts.map((p) => p[1])) || 1;
  const x = (t) => ((t - t0) / (t1 - t0)) * W;
  const y = (v) => H - (v / top) * (H - 4);
  if (limit) svg.append(s('line', {x1: 0, x2: W, y1: y(limit), y2: y(limit), class: 'limit'}));
  svg.append(s('polyline', {points: pts.map((p) => x(p[0]).toFixed(1) + ',' + y(p[1]).toFixed(1)).join(' '), class: 'line'}));
  for (const m of marks) {
    if (m < t0 || m > t1) continue;
    svg.append(s('line', {x1: x(m), x2: x(m), y1: 0, y2: H, class: 'oom'}, s('title', {}, 'OOM kill')));
  }
  return svg;
}

const MAX_LOG = 512 * 1024; // characters kept on screen

export async function logsPage(ctx, id, task) {
  const params = new URLSearchParams(location.search);
  const type = params.get('type') === 'stderr' ? 'stderr' : 'stdout';
  document.title = task + ' ' + type + ' · pluginhost';
  const pre = h('pre', {class: 'log', tabindex: '0', 'aria-label': task + ' ' + type});
  const follow = h('input', {type: 'checkbox', id: 'follow', checked: true});
  const base = '/ui/allocations/' + enc(id) + '/' + enc(task) + '/logs';
  replace(ctx.main,
    h('h1', {}, 'Logs of ', h('span', {class: 'name'}, task), ' in ', link('/ui/allocations/' + enc(id), h('code', {}, shortID(id)))),
    h('div', {class: 'tabs', role: 'tablist'},
      link(base, 'stdout'), ' ', link(base + '?type=stderr', 'stderr')),
    h('p', {}, h('label', {for: 'follow'}, follow, ' Follow')), pre);
  for (const a of ctx.main.querySelectorAll('.tabs a')) {
    if ((a.search === '?type=stderr') === (type === 'stderr')) a.setAttribute('aria-current', 'page');
  }
  let text = '';
  const node = document.createTextNode('');
  pre.append(node);
  const flush = () => {
    if (text.length > MAX_LOG) text = text.slice(text.length - MAX_LOG);
    const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    node.data = text;
    if (follow.checked && atEnd) pre.scrollTop = pre.scrollHeight;
  };
  const q = '?task=' + enc(task) + '&type=' + type + '&follow=true';
  try {
    await api.stream('/v1/client/fs/logs/' + enc(id) + q, ctx.signal, (chunk) => { text += chunk; flush(); });
  } catch (e) {
    if (!ctx.signal.aborted) ctx.error(e);
  }
}
