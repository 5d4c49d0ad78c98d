package volumes

import (
	"path/filepath"
	"slices"
	"time"
)

// A Claim is one allocation's use of a volume: recorded in the volume's
// record before any CSI call is made for it, advanced one durable step at
// a time by the volume's reconcile pass (ControllerPublish, NodeStage,
// NodePublish), and unwound the same way when the allocation is done.
// Because claims and their progress live in the volume's record, which
// staging paths are still in use survives any restart of the agent.
type Claim struct {
	AllocID   string
	JobID     string
	TaskGroup string
	// Mode is read or write: a `read_only` volume block claims read.
	Mode ClaimMode
	// AccessMode and AttachmentMode are the job's, one of the volume's
	// capabilities.
	AccessMode     string
	AttachmentMode string
	// MountOptions are the volume's, overridden by the job's.
	MountOptions *MountOptions

	// Desired is what should become of the claim.
	Desired ClaimDesired
	// State is the last step known done.
	State ClaimState
	// StateDescription says what the claim waits for, or why it failed.
	StateDescription string
	// Failed is set when a step failed with an error no retry can fix; the
	// allocation waiting for the mount fails, and its release unwinds
	// whatever was done.
	Failed    bool
	Attempts  int
	LastError string

	// StagingPath and TargetPath are fixed when the first node step is
	// taken, from the node plugin's staging directory, so that a release
	// unwinds exactly what was mounted even if the plugin moved since.
	StagingPath string
	TargetPath  string

	CreateTime time.Time
	ModifyTime time.Time
}

// ClaimMode is what an allocation does with a volume.
type ClaimMode string

const (
	ClaimRead  ClaimMode = "read"
	ClaimWrite ClaimMode = "write"
)

// ClaimDesired is the recorded intent for a claim.
type ClaimDesired string

const (
	// ClaimMounted: published for the allocation.
	ClaimMounted ClaimDesired = "mounted"
	// ClaimReleased: unpublished, unstaged when nobody else uses the
	// staging path, controller-unpublished with the last claim, forgotten.
	ClaimReleased ClaimDesired = "released"
)

// ClaimState is a claim's progress. On the way up each state is the last
// step done; the step after it may have reached the plugin before the
// agent died, so a release always undoes it too (every node RPC tolerates
// a repeat, and the spec answers OK for what is not there).
type ClaimState string

const (
	ClaimPending             ClaimState = "pending"
	ClaimControllerPublished ClaimState = "controller-published"
	ClaimStaged              ClaimState = "staged"
	ClaimPublished           ClaimState = "published"
	// On the way down:
	ClaimUnpublished ClaimState = "unpublished"
	ClaimUnstaged    ClaimState = "unstaged"
)

// Usage names how a claim uses the volume on the node: read-only or not,
// attachment and access mode. Claims of one usage share a staging path;
// different usages never do (Nomad's per-usage staging).
func (c *Claim) Usage() string {
	rw := "rw"
	if c.Mode == ClaimRead {
		rw = "ro"
	}
	return rw + "-" + c.AttachmentMode + "-" + c.AccessMode
}

// ReadOnly reports whether the allocation may only read.
func (c *Claim) ReadOnly() bool { return c.Mode == ClaimRead }

// Mounted reports whether the claim's volume is published for its
// allocation.
func (c *Claim) Mounted() bool { return c.Desired == ClaimMounted && c.State == ClaimPublished }

// settled reports whether the claim has no work left.
func (c *Claim) settled() bool {
	if c.Desired == ClaimReleased {
		return false // a released claim is work until it is forgotten
	}
	return c.State == ClaimPublished || c.Failed
}

// mayUseStaging reports whether the claim's staging path may hold a mount
// it needs: it is staged, or on its way to be (a NodeStage may be in
// flight), and not released past its unstage.
func (c *Claim) mayUseStaging() bool {
	switch c.State {
	case ClaimStaged, ClaimPublished:
		return true
	case ClaimControllerPublished:
		return c.Desired == ClaimMounted && !c.Failed
	}
	return false
}

// StagingPath is where a volume is staged for one usage:
// <base>/staging/<volume>/<usage>. Volume IDs are unique on the agent, so
// two volumes never share a path (Nomad #18741).
func StagingPath(base, volumeID, usage string) string {
	return filepath.Join(base, "staging", volumeID, usage)
}

// TargetPath is where a volume is published for one allocation:
// <base>/per-alloc/<alloc>/<volume>/<usage>.
func TargetPath(base, allocID, volumeID, usage string) string {
	return filepath.Join(base, "per-alloc", allocID, volumeID, usage)
}

// claim returns the volume's claim by allocation, or nil.
func (v *Volume) claim(allocID string) *Claim {
	for _, c := range v.Claims {
		if c.AllocID == allocID {
			return c
		}
	}
	return nil
}

// removeClaim drops an allocation's claim.
func (v *Volume) removeClaim(allocID string) {
	v.Claims = slices.DeleteFunc(v.Claims, func(c *Claim) bool { return c.AllocID == allocID })
}

// claimsSettled reports whether no claim has work left.
func (v *Volume) claimsSettled() bool {
	for _, c := range v.Claims {
		if !c.settled() {
			return false
		}
	}
	return true
}

func (c *Claim) clone() *Claim {
	if c == nil {
		return nil
	}
	x := *c
	x.MountOptions = c.MountOptions.clone()
	return &x
}
