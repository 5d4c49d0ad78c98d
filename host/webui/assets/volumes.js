// volumes.js: CSI volumes, and one volume's claims with the step each is
// at (controller-published, staged, published, and back), and snapshots.

import {h, replace, link, table, kv, badge, when, shortID, bytes} from './dom.js';
import * as api from './api.js';

const enc = encodeURIComponent;

// The steps of a claim, in order, as the reconciler takes them.
const MOUNT_STEPS = ['pending', 'controller-published', 'staged', 'published'];
const RELEASE_STEPS = ['published', 'unpublished', 'unstaged', 'released'];

export async function volumesPage(ctx) {
  document.title = 'Volumes · pluginhost';
  const plugin = new URLSearchParams(location.search).get('plugin') || '';
  const list = h('div', {});
  replace(ctx.main, h('h1', {}, 'CSI volumes', plugin ? ' of ' + plugin : ''), list);
  await ctx.live(async () => {
    const vs = await api.get('/v1/volumes?type=csi' + (plugin ? '&plugin_id=' + enc(plugin) : ''), ctx.signal);
    vs.sort((a, b) => a.ID.localeCompare(b.ID));
    replace(list, table('', ['Volume', 'Plugin', 'Capacity', 'Access', 'State', 'Schedulable'],
      vs.map((v) => [link('/ui/csi/volumes/' + enc(v.ID), v.ID), link('/ui/csi/plugins/' + enc(v.PluginID), v.PluginID),
        v.Capacity ? bytes(v.Capacity) : '—', (v.AccessModes || []).join(', '),
        [badge(v.State), v.StateDescription ? ' ' + v.StateDescription : ''], v.Schedulable ? 'yes' : 'no']),
      'No volumes. Create one: pluginhost volume create examples/volumes/data.hcl'));
  }, (ev) => ev.Topic === 'Volume');
}

// steps shows a claim's way as a row of steps, the one it is at marked.
function steps(c) {
  const way = c.Desired === 'released' ? RELEASE_STEPS : MOUNT_STEPS;
  const at = way.indexOf(c.State);
  return h('ol', {class: 'steps', 'aria-label': 'Claim steps'}, way.map((st, i) =>
    h('li', {class: i < at ? 'done' : i === at ? 'here' : 'todo', 'aria-current': i === at ? 'step' : null}, st)));
}

export async function volumePage(ctx, id) {
  document.title = id + ' · volume · pluginhost';
  const head = h('div', {});
  const claims = h('section', {'aria-labelledby': 'claims'});
  const snaps = h('section', {'aria-labelledby': 'snaps'});
  replace(ctx.main, head, claims, snaps);
  await ctx.live(async () => {
    const v = await api.get('/v1/volume/csi/' + enc(id), ctx.signal);
    replace(head, h('h1', {}, 'Volume ', h('span', {class: 'name'}, v.ID), ' ', badge(v.State)),
      v.StateDescription ? h('p', {class: 'desc'}, v.StateDescription) : null,
      v.LastError ? h('p', {class: 'error-text'}, 'Last error: ', v.LastError) : null,
      kv([['Plugin', link('/ui/csi/plugins/' + enc(v.PluginID), v.PluginID)], ['External ID', h('code', {}, v.ExternalID || '—')],
        ['Capacity', v.Capacity ? bytes(v.Capacity) : '—'], ['Schedulable', v.Schedulable ? 'yes' : 'no'],
        ['Readers / writers', v.CurrentReaders + ' / ' + v.CurrentWriters], ['Controller publish', v.ControllerPublish || '—'],
        ['Capabilities', (v.RequestedCapabilities || []).map((c) => c.AccessMode + ' (' + c.AttachmentMode + ')').join(', ')],
        ['Created', when(v.CreateTime)]]));
    replace(claims, h('h2', {id: 'claims'}, 'Claims'), table('', ['Allocation', 'Job', 'Mode', 'Desired', 'Steps', 'Now', 'Paths'],
      (v.Claims || []).map((c) => [link('/ui/allocations/' + enc(c.AllocID), h('code', {}, shortID(c.AllocID))),
        link('/ui/jobs/' + enc(c.JobID), c.JobID), c.Mode, c.Desired, steps(c),
        [c.Failed ? badge('failed') : '', ' ', c.StateDescription || '', c.LastError ? ' (' + c.LastError + ')' : ''],
        h('div', {class: 'paths'}, c.StagingPath ? h('div', {}, 'staging ', h('code', {}, c.StagingPath)) : null,
          c.TargetPath ? h('div', {}, 'target ', h('code', {}, c.TargetPath)) : null)]),
      'No claims.'));
    let list = [];
    try {
      list = (await api.get('/v1/volumes/snapshot?plugin_id=' + enc(v.PluginID), ctx.signal)).Snapshots || [];
    } catch (e) { /* a plugin without snapshots */ }
    replace(snaps, h('h2', {id: 'snaps'}, 'Snapshots'), table('', ['Snapshot', 'Name', 'Size', 'Ready', 'Created'],
      list.filter((sn) => sn.SourceVolumeID === v.ID || sn.ExternalSourceVolumeID === v.ExternalID).map((sn) =>
        [h('code', {}, sn.ID), sn.Name || '', bytes(sn.SizeBytes), sn.IsReady ? 'yes' : 'no', when(sn.CreateTime)]),
      'No snapshots.'));
  }, (ev) => ev.Topic === 'Volume' && (ev.Key === id || !ev.Key));
}
