package apiserver

import (
	"context"
	"fmt"
	"io"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/jobspec"
)

// Backend is what the HTTP server serves. The agent (package host)
// implements it; the server only translates HTTP to these calls and errors
// back to status codes, so every rule about jobs and plugins lives in one
// place, behind this interface.
//
// Every method must honour ctx: it is the request's context and is
// cancelled when the client goes away.
type Backend interface {
	// RunJob registers (or updates) a job and starts its allocations.
	RunJob(ctx context.Context, job *jobspec.Job) (*api.JobRegisterResponse, error)
	// StopJob stops a job's allocations; purge also forgets the job.
	StopJob(ctx context.Context, jobID string, purge bool) error
	// JobVersions lists a job's kept versions, newest first.
	JobVersions(ctx context.Context, jobID string) ([]*api.Job, error)
	// RevertJob submits an earlier version's spec again as a new version.
	RevertJob(ctx context.Context, jobID string, version uint64) (*api.JobRegisterResponse, error)
	Jobs(ctx context.Context) ([]*api.JobListStub, error)
	Job(ctx context.Context, id string) (*api.Job, error)
	// Allocs lists a job's allocations; it returns ErrNotFound for an
	// unknown job rather than an empty list.
	Allocs(ctx context.Context, jobID string) ([]*api.AllocListStub, error)
	// Alloc accepts a full ID or a unique prefix; an ambiguous prefix is an
	// *AmbiguousError.
	Alloc(ctx context.Context, id string) (*api.Allocation, error)
	// AllocLogs copies a task's rotated log files to w, oldest first, and
	// with follow keeps copying until ctx is done or the task is dead and
	// its logs drained. It must not write to w before it has validated its
	// arguments, so that errors can still become a status code.
	AllocLogs(ctx context.Context, allocID, task string, stderr, follow bool, w io.Writer) error
	// AllocStats samples the cgroups of the allocation's running tasks
	// (allocID is a full ID); tasks not running are absent.
	AllocStats(ctx context.Context, allocID string) (*api.AllocResourceUsage, error)
	Plugins(ctx context.Context) ([]*api.CSIPluginListStub, error)
	// CreateVolume records a volume to create (or to expand, when it
	// exists with a smaller capacity_min) and queues the work; RegisterVolume
	// records an existing one. Both answer once the intent is recorded.
	CreateVolume(ctx context.Context, req *api.CSIVolumeRegisterRequest) (*api.CSIVolumeRegisterResponse, error)
	RegisterVolume(ctx context.Context, req *api.CSIVolumeRegisterRequest) (*api.CSIVolumeRegisterResponse, error)
	// DeleteVolume records that a volume is to be deleted at its plugin;
	// DeregisterVolume that it is to be forgotten (force: even if claimed).
	DeleteVolume(ctx context.Context, id string) (*api.CSIVolume, error)
	DeregisterVolume(ctx context.Context, id string, force bool) (*api.CSIVolume, error)
	// DetachVolume releases the volume's claims held by allocations that
	// ended and answers once they are unwound (Nomad's volume detach).
	DetachVolume(ctx context.Context, id string) (*api.CSIVolume, error)
	Volume(ctx context.Context, id string) (*api.CSIVolume, error)
	Volumes(ctx context.Context, pluginID string) ([]*api.CSIVolumeListStub, error)
	ExternalVolumes(ctx context.Context, pluginID string) ([]*api.CSIVolumeExternalStub, error)
	CreateSnapshot(ctx context.Context, volumeID, name string) (*api.CSISnapshot, error)
	DeleteSnapshot(ctx context.Context, pluginID, snapshotID string) error
	ListSnapshots(ctx context.Context, pluginID string) ([]*api.CSISnapshot, error)
	Plugin(ctx context.Context, id string) (*api.CSIPlugin, error)
	// Events subscribes to the live event stream. The channel is closed
	// when ctx is done (and may be closed earlier, e.g. on agent shutdown
	// or when the subscriber fell too far behind).
	// With from > 0 the stream starts with the kept events from that
	// index on (Nomad's ?index=N is from N+1; ?index=0, every kept one).
	Events(ctx context.Context, from uint64) (<-chan *api.Event, error)
	Self(ctx context.Context) (*api.AgentSelf, error)
}

// FieldError is bad input the user can fix: the server answers 400 and names
// Field in the JSON body. Backends return it for requests that are well
// formed but not acceptable (e.g. a job the agent cannot run).
type FieldError struct {
	// Field is the request field (query parameter, body field or job
	// attribute path such as "TaskGroups[0].Tasks[0].Driver").
	Field string
	// Err says what is wrong with it.
	Err error
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("%s: %v", e.Field, e.Err)
}

func (e *FieldError) Unwrap() error { return e.Err }

// fieldErrorf builds a *FieldError.
func fieldErrorf(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
}

// AmbiguousError says an ID prefix matched more than one object; the server
// answers 400 and lists the matches, as Nomad's CLI does.
type AmbiguousError struct {
	Prefix  string
	Matches []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("prefix %q matched %d objects: %v", e.Prefix, len(e.Matches), e.Matches)
}
