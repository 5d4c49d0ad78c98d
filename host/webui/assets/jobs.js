// jobs.js: the jobs list and a job's page (summary, rollout, allocations,
// versions with a diff between any two, recent events, actions).

import {h, on, replace, link, table, kv, badge, when, shortID} from './dom.js';
import * as api from './api.js';
import {diffLines} from './diff.js';

const enc = encodeURIComponent;

function groupSummary(job) {
  const s = (job.JobSummary && job.JobSummary.Summary) || {};
  return Object.keys(s).sort().map((g) => {
    const c = s[g];
    const parts = [];
    for (const k of ['Running', 'Starting', 'Queued', 'Complete', 'Failed', 'Lost']) {
      if (c[k]) parts.push(c[k] + ' ' + k.toLowerCase());
    }
    return h('div', {}, h('span', {class: 'group'}, g), ': ', parts.join(', ') || 'none');
  });
}

export async function jobsPage(ctx) {
  const list = h('div', {});
  replace(ctx.main, h('h1', {}, 'Jobs'), list);
  document.title = 'Jobs · pluginhost';
  await ctx.live(async () => {
    const jobs = await api.get('/v1/jobs', ctx.signal);
    jobs.sort((a, b) => a.ID.localeCompare(b.ID));
    replace(list, table('', ['Job', 'Type', 'Status', 'Version', 'Groups', 'Submitted'],
      jobs.map((j) => [link('/ui/jobs/' + enc(j.ID), j.ID), j.Type, badge(j.Status), String(j.Version),
        groupSummary(j), when(j.SubmitTime)]),
      'No jobs. Run one: pluginhost job run examples/sleep.hcl'));
  }, (ev) => ev.Topic === 'Job' || ev.Topic === 'Allocation');
}

// PAGE is how many allocations a job's page shows at first (Nomad's UI
// pages them too): a job of 1,000 draws in well under 200 ms.
const PAGE = 100;

// allocTable shows a job's allocations, newest first, PAGE at a time, with
// a link to each task's logs (one click from the job, Nomad #12597).
export function allocTable(allocs, shown, more) {
  allocs.sort((a, b) => b.CreateTime - a.CreateTime);
  const rows = allocs.slice(0, shown).map((a) => [
    link('/ui/allocations/' + enc(a.ID), h('code', {}, shortID(a.ID))),
    a.TaskGroup, String(a.JobVersion), a.DesiredStatus, badge(a.ClientStatus),
    a.DesiredDescription || a.ClientDescription || '',
    when(a.CreateTime),
    Object.keys(a.TaskStates || {}).sort().map((t) =>
      link('/ui/allocations/' + enc(a.ID) + '/' + enc(t) + '/logs', t)),
  ]);
  const out = [table('', ['Allocation', 'Group', 'Version', 'Desired', 'Status', 'Why', 'Created', 'Logs'], rows, 'No allocations.')];
  if (allocs.length > shown) {
    out.push(h('p', {class: 'pager'}, 'Showing ' + shown + ' of ' + allocs.length + ' allocations. ',
      on(h('button', {type: 'button'}, 'Show ' + Math.min(PAGE, allocs.length - shown) + ' more'), 'click', more)));
  }
  return out;
}

// byStatus counts allocations by client status: "998 complete, 2 failed".
function byStatus(allocs) {
  const n = {};
  for (const a of allocs) n[a.ClientStatus] = (n[a.ClientStatus] || 0) + 1;
  return Object.keys(n).sort().map((k) => [badge(k), ' ' + n[k] + ' ']);
}

// taskEvents flattens the allocations' task events, newest first.
export function recentEvents(allocs, n) {
  const out = [];
  for (const a of allocs) {
    for (const [task, ts] of Object.entries(a.TaskStates || {})) {
      for (const e of ts.Events || []) out.push({a, task, e});
    }
  }
  out.sort((x, y) => y.e.Time - x.e.Time);
  return table('', ['When', 'Allocation', 'Task', 'Type', 'Message'],
    out.slice(0, n).map(({a, task, e}) => [when(e.Time), link('/ui/allocations/' + enc(a.ID), h('code', {}, shortID(a.ID))),
      task, e.Type, e.DisplayMessage || '']), 'No events yet.');
}

function actionButton(ctx, label, title, fn) {
  const b = h('button', {type: 'button', disabled: !ctx.canWrite(),
    title: ctx.canWrite() ? title : 'Needs the management token'}, label);
  on(b, 'click', async () => {
    b.disabled = true;
    try {
      await fn();
      ctx.error(null);
    } catch (e) {
      ctx.error(e);
    } finally {
      b.disabled = !ctx.canWrite();
    }
  });
  return b;
}

export async function jobPage(ctx, id) {
  document.title = id + ' · pluginhost';
  const head = h('div', {});
  const actions = h('div', {class: 'actions'});
  const summary = h('section', {'aria-labelledby': 'sum'});
  const rollout = h('section', {'aria-labelledby': 'roll'});
  const allocsEl = h('section', {'aria-labelledby': 'allocs'});
  const versionsEl = h('section', {'aria-labelledby': 'versions'});
  const eventsEl = h('section', {'aria-labelledby': 'events'});
  replace(ctx.main, head, actions, summary, rollout, allocsEl, versionsEl, eventsEl);
  const path = '/v1/job/' + enc(id);
  let diffState = null;
  let mine = new Set(); // this job's allocations, whose task events matter
  let shown = PAGE;

  await ctx.live(async () => {
    const [job, allocs, versions] = await Promise.all([
      api.get(path, ctx.signal), api.get(path + '/allocations', ctx.signal), api.get(path + '/versions', ctx.signal)]);
    mine = new Set(allocs.map((a) => a.ID));
    replace(head, h('h1', {}, 'Job ', h('span', {class: 'name'}, job.ID), ' ', badge(job.Status)),
      job.StatusDescription ? h('p', {class: 'desc'}, job.StatusDescription) : null);
    replace(actions,
      job.Stop ? actionButton(ctx, 'Start', 'Run the current version again', () =>
        api.send('POST', path + '/revert', {JobID: job.ID, JobVersion: job.Version}))
        : actionButton(ctx, 'Stop', 'Stop every allocation of the job', () => api.send('DELETE', path)),
      actionButton(ctx, 'Purge', 'Stop the job and forget it', async () => {
        if (!confirm('Stop job ' + job.ID + ' and forget it, its versions and allocations?')) return;
        await api.send('DELETE', path + '?purge=true');
        ctx.navigate('/ui/jobs');
      }));
    replace(summary, h('h2', {id: 'sum'}, 'Summary'),
      kv([['Type', job.Type], ['Version', String(job.Version)], ['Submitted', when(job.SubmitTime)],
        ['Source', job.SourcePath || '—'], ['Groups', groupSummary(job)]]));

    const stable = (versions.Versions || []).find((v) => v.Stable);
    const byVersion = {};
    for (const a of allocs) (byVersion[a.JobVersion] ||= []).push(a);
    replace(rollout, h('h2', {id: 'roll'}, 'Rollout'),
      kv([
        ['Newest version', String(job.Version)],
        ['Last healthy version', stable ? String(stable.Version) : 'none yet'],
        ['Last outcome', job.Update ? ['version ' + job.Update.Version + ': ', badge(job.Update.Status), ' ', job.Update.Description || ''] : 'none yet'],
        ['Allocations by version', Object.keys(byVersion).sort((x, y) => y - x).map((v) => h('div', {},
          'version ' + v + ': ', byStatus(byVersion[v]), stopReasons(byVersion[v])))],
      ]));
    const drawAllocs = () => replace(allocsEl, h('h2', {id: 'allocs'}, 'Allocations'),
      allocTable(allocs, shown, () => { shown += PAGE; drawAllocs(); }));
    drawAllocs();
    renderVersions(ctx, versionsEl, job, versions.Versions || [], diffState, (s) => { diffState = s; });
    replace(eventsEl, h('h2', {id: 'events'}, 'Recent events'), recentEvents(allocs, 15));
  }, (ev) => ev.Key === id || (ev.Payload && (ev.Payload.JobID === id || mine.has(ev.Payload.AllocID))));
}

// stopReasons says why a version's allocations were stopped, each reason
// once ("superseded by version 3 before it became healthy").
function stopReasons(allocs) {
  const why = new Set(allocs.filter((a) => a.DesiredStatus === 'stop' && a.DesiredDescription).map((a) => a.DesiredDescription));
  return [...why].map((w) => h('span', {class: 'why'}, '(' + w + ') '));
}

function specText(v) {
  return v.Spec ? JSON.stringify(v.Spec, null, 2) : '';
}

function renderVersions(ctx, el, job, versions, state, save) {
  const rows = versions.map((v) => [String(v.Version), v.Stable ? badge('stable') : '', when(v.SubmitTime),
    v.Version === job.Version ? 'current' : actionButton(ctx, 'Revert', 'Run version ' + v.Version + ' again, as a new version', () =>
      api.send('POST', '/v1/job/' + enc(job.ID) + '/revert', {JobID: job.ID, JobVersion: v.Version}))]);
  const options = (sel) => versions.map((v) => h('option', {value: v.Version, selected: v.Version === sel}, 'version ' + v.Version));
  const newer = state ? state.b : job.Version;
  const older = state ? state.a : (versions[1] ? versions[1].Version : job.Version);
  const a = h('select', {id: 'diff-a', 'aria-label': 'Older version'}, options(older));
  const b = h('select', {id: 'diff-b', 'aria-label': 'Newer version'}, options(newer));
  const out = h('div', {class: 'diff', role: 'region', 'aria-label': 'Differences'});
  const show = () => {
    const va = versions.find((v) => String(v.Version) === a.value);
    const vb = versions.find((v) => String(v.Version) === b.value);
    save({a: Number(a.value), b: Number(b.value)});
    if (!va || !vb) return;
    const lines = diffLines(specText(va), specText(vb));
    const changed = lines.some((l) => l.op !== ' ');
    replace(out, changed ? h('pre', {}, lines.filter((l) => l.op !== ' ' || l.near).map((l) =>
      h('span', {class: l.op === '+' ? 'add' : l.op === '-' ? 'del' : 'ctx'}, l.op + ' ' + l.text + '\n')))
      : h('p', {class: 'empty'}, 'No differences.'));
  };
  on(a, 'change', show);
  on(b, 'change', show);
  replace(el, h('h2', {id: 'versions'}, 'Versions'), table('', ['Version', 'Stable', 'Submitted', ''], rows),
    h('div', {class: 'diff-pick'}, h('label', {for: 'diff-a'}, 'Compare '), a, h('label', {for: 'diff-b'}, ' with '), b), out);
  show();
}
