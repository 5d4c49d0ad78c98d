package volumespec

// Volume is a CSI volume specification: what `volume create` asks a
// plugin's controller to make, or what `volume register` records about a
// volume that already exists. Field names follow Nomad's api.CSIVolume, so
// a JSON body written against Nomad's API reads the same here.
type Volume struct {
	// ID is how jobs' volume blocks name the volume (their `source`).
	ID string
	// Name is the CSI CreateVolume name, the key of the plugin's
	// idempotency: creating the same name twice yields one volume.
	Name string
	// Type is always "csi".
	Type     string
	PluginID string
	// ExternalID is the storage provider's ID of an existing volume
	// (register only; create learns it from the plugin).
	ExternalID string
	// SnapshotID or CloneID (create only, at most one) is the content
	// source of a new volume.
	SnapshotID string
	CloneID    string
	// RequestedCapacityMin and RequestedCapacityMax are bytes; 0 is unset.
	RequestedCapacityMin  int64
	RequestedCapacityMax  int64
	RequestedCapabilities []*Capability
	MountOptions          *MountOptions
	RequestedTopologies   *TopologyRequest
	// Secrets go to the plugin with each RPC and must never be shown.
	Secrets map[string]string
	// Parameters go to CreateVolume; Context is what CreateVolume
	// returned, given again to every publish and stage call.
	Parameters map[string]string
	Context    map[string]string
}

// Capability is one way a job may use the volume; a job's volume block must
// ask for exactly one of the volume's capabilities.
type Capability struct {
	AccessMode     string
	AttachmentMode string
}

// MountOptions are the defaults for file-system attachments; a job's own
// mount_options override them.
type MountOptions struct {
	FSType     string
	MountFlags []string
}

// TopologyRequest says where the volume must (Required) or should
// (Preferred) be accessible from.
type TopologyRequest struct {
	Required  []*Topology
	Preferred []*Topology
}

// Topology is one set of segments, such as {"rack": "R1", "zone": "a"}.
type Topology struct {
	Segments map[string]string
}

// Op is what a specification is used for. The file is the same for both;
// only a few keys belong to one of them.
type Op int

const (
	// OpCreate is `volume create`: the plugin makes the volume.
	OpCreate Op = iota + 1
	// OpRegister is `volume register`: the volume exists already.
	OpRegister
)

func (o Op) String() string {
	switch o {
	case OpCreate:
		return "create"
	case OpRegister:
		return "register"
	}
	return "unknown"
}
