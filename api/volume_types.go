package api

// Volume wire types. Field names follow Nomad's api.CSIVolume and
// api.CSISnapshot where the concept is the same; times are unix
// nanoseconds, as Nomad's CreateTime and ModifyTime.

// TopicVolume carries VolumeUpdated and VolumeDeleted events, with the
// volume in the payload: `volume create` follows its progress on them.
const TopicVolume = "Volume"

// Volume states, as volumes.VolumeState.
const (
	VolumeStatePending = "pending"
	VolumeStateReady   = "ready"
	VolumeStateFailed  = "failed"
)

// CSIVolume is GET /v1/volume/csi/<id>, and the form of a volume in create
// and register requests (where only the spec fields are read).
type CSIVolume struct {
	ID         string
	Name       string
	ExternalID string `json:",omitempty"`
	PluginID   string
	Provider   string `json:",omitempty"`
	SnapshotID string `json:",omitempty"`
	CloneID    string `json:",omitempty"`

	RequestedCapacityMin  int64 `json:",omitempty"`
	RequestedCapacityMax  int64 `json:",omitempty"`
	RequestedCapabilities []*CSIVolumeCapability
	MountOptions          *CSIMountOptions    `json:",omitempty"`
	RequestedTopologies   *CSITopologyRequest `json:",omitempty"`
	// Secrets are accepted in requests and never sent back: answers carry
	// their keys with redacted values, as Nomad's do.
	Secrets    map[string]string `json:",omitempty"`
	Parameters map[string]string `json:",omitempty"`
	Context    map[string]string `json:",omitempty"`

	// What the plugin reported.
	Capacity   int64          `json:",omitempty"`
	Topologies []*CSITopology `json:",omitempty"`

	// Schedulable: ready, and the plugin is healthy.
	Schedulable         bool
	ControllerRequired  bool
	ControllersHealthy  int
	ControllersExpected int
	NodesHealthy        int
	NodesExpected       int

	// The reconciler's view: how the volume came to be known (created or
	// registered), what should become of it (present, deleted,
	// deregistered), how far it got (pending, ready, failed) and why.
	Origin           string `json:",omitempty"`
	Desired          string `json:",omitempty"`
	State            string `json:",omitempty"`
	StateDescription string `json:",omitempty"`
	Attempts         int    `json:",omitempty"`
	LastError        string `json:",omitempty"`
	// Queued: work for the volume is queued or in flight right now.
	Queued bool `json:",omitempty"`

	// Claims are the allocations using the volume (Nomad's ReadAllocs and
	// WriteAllocs, with each claim's progress); ControllerPublish is the
	// volume's ControllerPublish to this node ("" or published).
	Claims            []*CSIVolumeClaim `json:",omitempty"`
	ControllerPublish string            `json:",omitempty"`
	// CurrentReaders and CurrentWriters count the claims not released.
	CurrentReaders int
	CurrentWriters int

	CreateTime int64 `json:",omitempty"`
	ModifyTime int64 `json:",omitempty"`
}

// CSIVolumeClaim is one allocation's claim on a volume.
type CSIVolumeClaim struct {
	AllocID        string
	JobID          string
	TaskGroup      string
	Mode           string // read or write
	AccessMode     string
	AttachmentMode string
	// Desired is mounted or released; State the last step done
	// (pending, controller-published, staged, published, unpublished,
	// unstaged).
	Desired          string
	State            string
	StateDescription string `json:",omitempty"`
	Failed           bool   `json:",omitempty"`
	Attempts         int    `json:",omitempty"`
	LastError        string `json:",omitempty"`
	// StagingPath and TargetPath are the host paths the volume is staged
	// and published at for this claim.
	StagingPath string `json:",omitempty"`
	TargetPath  string `json:",omitempty"`
	CreateTime  int64  `json:",omitempty"`
	ModifyTime  int64  `json:",omitempty"`
}

// CSIVolumeCapability is one `capability` block.
type CSIVolumeCapability struct {
	AccessMode     string
	AttachmentMode string
}

// CSIMountOptions is a volume's `mount_options`.
type CSIMountOptions struct {
	FSType     string   `json:",omitempty"`
	MountFlags []string `json:",omitempty"`
}

// CSITopologyRequest is a volume's `topology_request`.
type CSITopologyRequest struct {
	Required  []*CSITopology `json:",omitempty"`
	Preferred []*CSITopology `json:",omitempty"`
}

// CSITopology is one set of topology segments.
type CSITopology struct {
	Segments map[string]string
}

// CSIVolumeListStub is one row of GET /v1/volumes?type=csi.
type CSIVolumeListStub struct {
	ID               string
	Name             string
	ExternalID       string
	PluginID         string
	Provider         string
	Capacity         int64
	AccessModes      []string
	Schedulable      bool
	State            string
	StateDescription string
	Attempts         int
	CreateTime       int64
	ModifyTime       int64
}

// CSIVolumeRegisterRequest is the body of the create and register routes:
// a volume specification file's text, parsed by the agent so that errors
// carry file:line:col, or an already decoded volume.
type CSIVolumeRegisterRequest struct {
	Source   string `json:",omitempty"`
	Filename string `json:",omitempty"`
	// Volumes holds one volume (Nomad's shape); exclusive with Source.
	Volumes []*CSIVolume `json:",omitempty"`
	// PathID is the volume ID of the request's path, set by the server:
	// the backend refuses a file that names another volume before it acts.
	PathID string `json:"-"`
}

// CSIVolumeRegisterResponse answers create and register with the volume as
// recorded (its work may still be pending).
type CSIVolumeRegisterResponse struct {
	Volumes  []*CSIVolume
	Warnings []string `json:",omitempty"`
}

// CSIVolumeExternalStub is one volume a plugin reports.
type CSIVolumeExternalStub struct {
	ExternalID    string
	CapacityBytes int64
	// VolumeID is the agent's volume of that external ID; "" if the volume
	// is not registered.
	VolumeID                 string `json:",omitempty"`
	PublishedExternalNodeIDs []string
}

// CSIVolumeListExternalResponse is GET /v1/volumes/external.
type CSIVolumeListExternalResponse struct {
	Volumes []*CSIVolumeExternalStub
}

// CSISnapshot is one snapshot.
type CSISnapshot struct {
	ID                     string
	ExternalSourceVolumeID string
	SourceVolumeID         string
	PluginID               string
	Name                   string `json:",omitempty"`
	SizeBytes              int64
	CreateTime             int64
	IsReady                bool
}

// CSISnapshotCreateRequest is the body of POST /v1/volumes/snapshot.
type CSISnapshotCreateRequest struct {
	Snapshots []*CSISnapshot
}

// CSISnapshotCreateResponse answers it.
type CSISnapshotCreateResponse struct {
	Snapshots []*CSISnapshot
}

// CSISnapshotListResponse is GET /v1/volumes/snapshot.
type CSISnapshotListResponse struct {
	Snapshots []*CSISnapshot
}
