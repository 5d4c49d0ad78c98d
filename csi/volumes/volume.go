package volumes

import (
	"errors"
	"slices"
	"time"
)

// A Volume is a CSI volume the agent knows: the spec it was created or
// registered with, what the plugin answered, what should become of it, and
// how the last attempt went. It is the durable record the volume reconciler
// works from: every request writes the desired state here first, and the
// reconciler makes the CSI calls and records their outcome.
type Volume struct {
	// ID is the agent's name for the volume (a job's `source`).
	ID string
	// Name is CreateVolume's name, the plugin's idempotency key: a create
	// retried after a crash finds the volume the first attempt made.
	Name     string
	PluginID string

	// ExternalID is the plugin's volume_id: given to register, returned by
	// CreateVolume.
	ExternalID string
	SnapshotID string
	CloneID    string

	RequestedCapacityMin  int64
	RequestedCapacityMax  int64
	RequestedCapabilities []*VolumeCapability
	MountOptions          *MountOptions
	RequestedTopologies   *TopologyRequest
	Secrets               map[string]string
	Parameters            map[string]string
	// Context is the volume context: what CreateVolume returned, or what
	// register was given; every later CSI call for the volume passes it.
	Context map[string]string

	// Capacity is what the plugin reports (0: unknown).
	Capacity           int64
	AccessibleTopology []*Topology

	// Claims are the allocations using the volume, ordered by allocation
	// ID (claim.go).
	Claims []*Claim
	// ControllerPublish is the volume's ControllerPublish to this node:
	// "" (none known) or "published", with the answer's PublishContext,
	// which every node call passes. NodeID is the node plugin's ID it was
	// published to.
	ControllerPublish ControllerPublishState
	PublishContext    map[string]string
	NodeID            string

	// Origin says how the agent came to know the volume.
	Origin VolumeOrigin
	// Desired is what should become of it.
	Desired VolumeDesired
	// State is how far the reconciler got.
	State VolumeState
	// StateDescription says what the volume waits for, or why it failed.
	StateDescription string
	// Attempts counts consecutive failed attempts at the pending work; a
	// new request resets it.
	Attempts int
	// LastError is the last failed attempt's error.
	LastError string
	// Generation counts the requests that changed the record. A pass
	// records its progress only if no request came while it ran: the
	// newer intent wins, and is worked on next.
	Generation uint64

	CreateTime time.Time
	ModifyTime time.Time
}

// VolumeCapability is one access and attachment mode jobs may claim the
// volume with (Nomad's `capability` block).
type VolumeCapability struct {
	AccessMode     string
	AttachmentMode string
}

// MountOptions are a file-system volume's defaults; a job's override them.
type MountOptions struct {
	FSType     string
	MountFlags []string
}

// clone is a deep copy of m; nil stays nil, and so does a nil MountFlags.
func (m *MountOptions) clone() *MountOptions {
	if m == nil {
		return nil
	}
	x := *m
	x.MountFlags = slices.Clone(m.MountFlags)
	return &x
}

// TopologyRequest is a volume's `topology_request`.
type TopologyRequest struct {
	Required  []*Topology
	Preferred []*Topology
}

// Topology is one set of topology segments.
type Topology struct {
	Segments map[string]string
}

// VolumeOrigin: created through the plugin, or registered as it exists.
type VolumeOrigin string

const (
	OriginCreated    VolumeOrigin = "created"
	OriginRegistered VolumeOrigin = "registered"
)

// VolumeDesired is the recorded intent for a volume.
type VolumeDesired string

const (
	// DesiredPresent: the volume exists at the plugin with the requested
	// capacity (CreateVolume, ControllerExpandVolume, or for a registered
	// volume ValidateVolumeCapabilities).
	DesiredPresent VolumeDesired = "present"
	// DesiredDeleted: DeleteVolume at the plugin, then forget it.
	DesiredDeleted VolumeDesired = "deleted"
	// DesiredDeregistered: forget it, leaving it at the plugin.
	DesiredDeregistered VolumeDesired = "deregistered"
)

// ControllerPublishState is how far a volume's ControllerPublish got.
type ControllerPublishState string

const (
	ControllerPublished ControllerPublishState = "published"
)

// VolumeState is the reconciler's progress towards Desired.
type VolumeState string

const (
	// StatePending: work remains; StateDescription says which, and what
	// it waits for.
	StatePending VolumeState = "pending"
	// StateReady: the volume is as desired.
	StateReady VolumeState = "ready"
	// StateFailed: the last attempt failed with an error a retry cannot
	// fix (InvalidArgument, a missing capability, ...). Nothing more is
	// tried until a new request.
	StateFailed VolumeState = "failed"
)

// Settled reports whether the reconciler has nothing left to do for the
// volume until a new request.
func (v *Volume) Settled() bool { return v.State == StateReady || v.State == StateFailed }

// Clone returns a deep copy, so that records handed out are never shared.
// It keeps nil and empty apart, and nil entries of slices nil, so a clone
// equals a fresh decode of the record (the state store hands out clones of
// decoded records, and a stored [null] must not make a read panic).
func (v *Volume) Clone() *Volume {
	if v == nil {
		return nil
	}
	c := *v
	if v.RequestedCapabilities != nil {
		c.RequestedCapabilities = make([]*VolumeCapability, len(v.RequestedCapabilities))
		for i, cp := range v.RequestedCapabilities {
			if cp != nil { // a decoded [null] stays nil
				x := *cp
				c.RequestedCapabilities[i] = &x
			}
		}
	}
	c.MountOptions = v.MountOptions.clone()
	if v.RequestedTopologies != nil {
		c.RequestedTopologies = &TopologyRequest{
			Required:  cloneTopologies(v.RequestedTopologies.Required),
			Preferred: cloneTopologies(v.RequestedTopologies.Preferred),
		}
	}
	c.AccessibleTopology = cloneTopologies(v.AccessibleTopology)
	c.Secrets, c.Parameters, c.Context = cloneMap(v.Secrets), cloneMap(v.Parameters), cloneMap(v.Context)
	c.PublishContext = cloneMap(v.PublishContext)
	if v.Claims != nil {
		c.Claims = make([]*Claim, len(v.Claims))
		for i, cl := range v.Claims {
			c.Claims[i] = cl.clone()
		}
	}
	return &c
}

func cloneTopologies(ts []*Topology) []*Topology {
	if ts == nil {
		return nil
	}
	out := make([]*Topology, len(ts))
	for i, t := range ts {
		if t != nil {
			out[i] = &Topology{Segments: cloneMap(t.Segments)}
		}
	}
	return out
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// ErrVolumeNotFound is returned by a VolumeStore and the VolumeManager for
// an unknown volume ID.
var ErrVolumeNotFound = errors.New("volume not found")

// VolumeStore is where volume records live; host/state implements it on the
// agent's bbolt file. Every write is durable when it returns.
type VolumeStore interface {
	// PutVolume inserts or replaces a volume's record.
	PutVolume(v *Volume) error
	// DeleteVolume forgets a volume; a missing one is not an error.
	DeleteVolume(id string) error
	// Volume returns one record, ErrVolumeNotFound if there is none.
	Volume(id string) (*Volume, error)
	// Volumes returns every record, ordered by ID.
	Volumes() ([]*Volume, error)
}
