package plugins

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/dynamic"
)

// Registration options a node plugin's supervisor sets (dynamic.PluginInfo
// Options): where the plugin may mount, and under which directory the
// volume code stages and publishes.
const (
	OptionMountDir            = "MountDir"
	OptionStagePublishBaseDir = "StagePublishBaseDir"
)

// Fingerprint is what pluginhost knows about one plugin allocation of one
// type: the result of its latest fingerprint. Values handed out are copies.
type Fingerprint struct {
	// PluginID is the plugin's registered name (the job's csi_plugin id).
	PluginID string
	// Type is dynamic.PluginTypeCSIController or dynamic.PluginTypeCSINode.
	Type    string
	AllocID string
	// SocketPath is the socket the fingerprint was taken over.
	SocketPath string

	// Provider and ProviderVersion are GetPluginInfo's name and
	// vendor_version: the driver's own identity, which need not match the
	// plugin ID the job chose.
	Provider        string
	ProviderVersion string
	Manifest        map[string]string

	Healthy bool
	// HealthDescription says why Healthy is what it is.
	HealthDescription string

	PluginCapabilities     []string
	ControllerCapabilities []string // controllers only
	NodeCapabilities       []string // nodes only
	NodeInfo               *NodeInfo
	// StagingDir is the host directory under which a node plugin stages
	// and publishes volumes (its registration's StagePublishBaseDir
	// option); "" when the registration did not say.
	StagingDir string

	// LastFingerprint is when the latest fingerprint finished.
	LastFingerprint time.Time
	// FingerprintDone is set once the first fingerprint has finished,
	// successful or not.
	FingerprintDone bool
}

// NodeInfo is NodeGetInfo's answer.
type NodeInfo struct {
	NodeID string
	// MaxVolumes is max_volumes_per_node; 0 means the driver sets no limit.
	MaxVolumes int64
	// Topology is accessible_topology's segments; nil when the driver
	// reports none.
	Topology map[string]string
}

// Copy returns a deep copy.
func (f *Fingerprint) Copy() *Fingerprint {
	if f == nil {
		return nil
	}
	c := *f
	c.Manifest = maps.Clone(f.Manifest)
	c.PluginCapabilities = slices.Clone(f.PluginCapabilities)
	c.ControllerCapabilities = slices.Clone(f.ControllerCapabilities)
	c.NodeCapabilities = slices.Clone(f.NodeCapabilities)
	if f.NodeInfo != nil {
		ni := *f.NodeInfo
		ni.Topology = maps.Clone(f.NodeInfo.Topology)
		c.NodeInfo = &ni
	}
	return &c
}

// HasPluginCapability and HasNodeCapability report whether the driver
// advertised the named capability.
func (f *Fingerprint) HasPluginCapability(name string) bool {
	return slices.Contains(f.PluginCapabilities, name)
}

// HasNodeCapability: see HasPluginCapability.
func (f *Fingerprint) HasNodeCapability(name string) bool {
	return slices.Contains(f.NodeCapabilities, name)
}

// fingerprinter takes the fingerprints of one allocation. It is used by one
// goroutine at a time (its instance manager's), so it needs no lock.
//
// GetPluginInfo, GetPluginCapabilities and NodeGetInfo describe the driver
// binary, which cannot change while the allocation lives, so they are asked
// until they have succeeded once. Probe and the service capabilities are
// asked every time: they are the health check.
type fingerprinter struct {
	// client and clientErr are set at construction and never change, so
	// Manager.Client may read them from other goroutines.
	client *csi.Client
	// clientErr is why client is nil: the registered socket is unusable.
	clientErr error
	fp        Fingerprint
	static    bool // the once-only part has succeeded
}

func newFingerprinter(info *dynamic.PluginInfo, client *csi.Client, clientErr error) *fingerprinter {
	f := &fingerprinter{client: client, clientErr: clientErr}
	f.fp = Fingerprint{
		PluginID:          info.Name,
		Type:              info.Type,
		AllocID:           info.AllocID,
		HealthDescription: "not fingerprinted yet",
	}
	if info.ConnectionInfo != nil {
		f.fp.SocketPath = info.ConnectionInfo.SocketPath
	}
	f.fp.StagingDir = info.Options[OptionStagePublishBaseDir]
	return f
}

// run takes one fingerprint and returns a copy of the result. Failures are
// not errors here: they are an unhealthy fingerprint with the reason.
func (f *fingerprinter) run(ctx context.Context) *Fingerprint {
	healthy, why := f.check(ctx)
	f.fp.Healthy = healthy
	f.fp.HealthDescription = why
	f.fp.LastFingerprint = time.Now()
	f.fp.FingerprintDone = true
	return f.fp.Copy()
}

// check asks every question of this fingerprint at once: the RPCs do not
// depend on each other, and a plugin's first fingerprint is on the path from
// "registered" to "healthy", where five round trips one after another cost
// more than the answers. The answers are judged in a fixed order (Probe,
// the once-only part, then the service's capabilities), so the reason given
// is the one asking them one by one would give.
func (f *fingerprinter) check(ctx context.Context) (bool, string) {
	if f.client == nil {
		return false, fmt.Sprintf("cannot connect: %v", f.clientErr)
	}
	if f.fp.Type != dynamic.PluginTypeCSIController && f.fp.Type != dynamic.PluginTypeCSINode {
		return false, fmt.Sprintf("unknown CSI plugin type %q", f.fp.Type)
	}
	var (
		wg        sync.WaitGroup
		probe     *csipb.ProbeResponse
		probeErr  error
		static    staticAnswers
		staticErr error
		svcCaps   []string
		svcErr    error
	)
	wg.Go(func() { probe, probeErr = f.client.Probe(ctx, &csipb.ProbeRequest{}) })
	if !f.static {
		wg.Go(func() { static, staticErr = f.askStatic(ctx) })
	}
	wg.Go(func() { svcCaps, svcErr = f.serviceCapabilities(ctx) })
	wg.Wait()

	if probeErr != nil {
		return false, fmt.Sprintf("probe failed: %v", probeErr)
	}
	// An unset ready means ready (CSI spec); false means the plugin is
	// still starting: not healthy, but not broken either.
	if r := probe.GetReady(); r != nil && !r.GetValue() {
		return false, "plugin is starting (probe: not ready)"
	}
	if !f.static {
		if staticErr != nil {
			return false, staticErr.Error()
		}
		f.fp.Provider = static.info.GetName()
		f.fp.ProviderVersion = static.info.GetVendorVersion()
		f.fp.Manifest = maps.Clone(static.info.GetManifest())
		f.fp.PluginCapabilities = csi.PluginCapabilityNames(static.caps.GetCapabilities())
		f.fp.NodeInfo = static.node
		f.static = true
	}
	if f.fp.Type == dynamic.PluginTypeCSIController {
		if !f.fp.HasPluginCapability(csi.CapControllerService) {
			return false, "plugin is registered as a controller but does not advertise " + csi.CapControllerService
		}
		if svcErr != nil {
			return false, fmt.Sprintf("controller capabilities: %v", svcErr)
		}
		f.fp.ControllerCapabilities = svcCaps
		return true, "healthy"
	}
	if svcErr != nil {
		return false, fmt.Sprintf("node capabilities: %v", svcErr)
	}
	f.fp.NodeCapabilities = svcCaps
	return true, "healthy"
}

// serviceCapabilities is ControllerGetCapabilities or NodeGetCapabilities,
// by the fingerprinted type.
func (f *fingerprinter) serviceCapabilities(ctx context.Context) ([]string, error) {
	if f.fp.Type == dynamic.PluginTypeCSIController {
		resp, err := f.client.ControllerGetCapabilities(ctx, &csipb.ControllerGetCapabilitiesRequest{})
		if err != nil {
			return nil, err
		}
		return csi.ControllerCapabilityNames(resp.GetCapabilities()), nil
	}
	resp, err := f.client.NodeGetCapabilities(ctx, &csipb.NodeGetCapabilitiesRequest{})
	if err != nil {
		return nil, err
	}
	return csi.NodeCapabilityNames(resp.GetCapabilities()), nil
}

// staticAnswers are the answers that describe the driver binary.
type staticAnswers struct {
	info *csipb.GetPluginInfoResponse
	caps *csipb.GetPluginCapabilitiesResponse
	node *NodeInfo
}

// askStatic asks GetPluginInfo, GetPluginCapabilities and, for a node,
// NodeGetInfo, all at once; the error is the first wrong answer in that
// order.
func (f *fingerprinter) askStatic(ctx context.Context) (staticAnswers, error) {
	var (
		wg                      sync.WaitGroup
		a                       staticAnswers
		infoErr, capsErr, niErr error
		ni                      *csipb.NodeGetInfoResponse
		isNode                  = f.fp.Type == dynamic.PluginTypeCSINode
	)
	wg.Go(func() { a.info, infoErr = f.client.GetPluginInfo(ctx, &csipb.GetPluginInfoRequest{}) })
	wg.Go(func() { a.caps, capsErr = f.client.GetPluginCapabilities(ctx, &csipb.GetPluginCapabilitiesRequest{}) })
	if isNode {
		wg.Go(func() { ni, niErr = f.client.NodeGetInfo(ctx, &csipb.NodeGetInfoRequest{}) })
	}
	wg.Wait()
	switch {
	case infoErr != nil:
		return a, fmt.Errorf("plugin info: %w", infoErr)
	case a.info.GetName() == "":
		return a, fmt.Errorf("plugin info: driver returned an empty name")
	case capsErr != nil:
		return a, fmt.Errorf("plugin capabilities: %w", capsErr)
	case !isNode:
		return a, nil
	case niErr != nil:
		return a, fmt.Errorf("node info: %w", niErr)
	case ni.GetNodeId() == "":
		return a, fmt.Errorf("node info: driver returned an empty node id")
	}
	a.node = &NodeInfo{
		NodeID:     ni.GetNodeId(),
		MaxVolumes: ni.GetMaxVolumesPerNode(),
		Topology:   maps.Clone(ni.GetAccessibleTopology().GetSegments()),
	}
	return a, nil
}
