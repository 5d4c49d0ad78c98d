package taskrunner

import (
	"context"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/nsexec"
	"github.com/pluginhost/pluginhost/host/state"
)

// AllocHook is one concern of a whole allocation, as opposed to one task's
// (Nomad's alloc runner hooks; the volume hook is one). A hook implements
// Name and any of the point interfaces below.
type AllocHook interface {
	Name() string
}

// AllocPrerunHook runs once per runner, before any of the allocation's
// tasks is launched; a restored allocation runs it too, while its live
// tasks are re-adopted (they do not wait for it), so it must be cheap when
// its work was done before the restart. An error fails every task that
// would launch, as unrecoverable.
type AllocPrerunHook interface {
	Prerun(ctx context.Context, req *AllocHookRequest) error
}

// AllocPostrunHook runs once every task of the allocation is dead for good
// (stopped, failed, completed); not when the agent merely shuts down.
type AllocPostrunHook interface {
	Postrun(req *AllocHookRequest)
}

// AllocHookRequest is what an allocation hook knows, and what a prerun
// hook hands to the tasks.
type AllocHookRequest struct {
	AllocID  string
	Index    int
	Job      *jobspec.Job
	Group    *jobspec.TaskGroup
	AllocDir string
	// TaskDirs maps each task's name to its directory (<alloc dir>/<task>).
	TaskDirs map[string]string
	Logger   hclog.Logger

	// Mounts, set by prerun hooks, are each task's bind mounts, by task
	// name; the task's launches pass them to the driver.
	Mounts map[string][]nsexec.Mount

	// note announces an informational event on every task.
	note func(typ, msg string)
}

// Note announces an event on every task of the allocation, so that a user
// looking at any of them sees what they wait for. Like Task Setup it is
// informational: stored with each task's next write, which follows soon
// (the launch, or the failure), not worth a commit of its own.
func (r *AllocHookRequest) Note(typ, msg string) { r.note(typ, msg) }

// allocHooks runs an allocation's hooks: prerun once, in a goroutine of its
// own, whose result every launch waits for; postrun once all tasks died.
type allocHooks struct {
	hooks []AllocHook
	req   *AllocHookRequest

	cancel     context.CancelFunc
	prerunDone chan struct{}
	prerunErr  error // set before prerunDone closes
	postOnce   sync.Once
}

func newAllocHooks(ar *AllocRunner, hooks []AllocHook) *allocHooks {
	return &allocHooks{hooks: hooks, req: ar.hookReq, prerunDone: make(chan struct{})}
}

// start runs the prerun hooks; ctx ends with the runner (Stop, Shutdown).
func (h *allocHooks) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		defer close(h.prerunDone)
		for _, hk := range h.hooks {
			p, ok := hk.(AllocPrerunHook)
			if !ok {
				continue
			}
			if err := p.Prerun(ctx, h.req); err != nil {
				h.prerunErr = fmt.Errorf("%s: %w", hk.Name(), err)
				return
			}
		}
	}()
}

// stop abandons a prerun in flight.
func (h *allocHooks) stop() {
	if h.cancel != nil {
		h.cancel()
	}
}

// await waits for the prerun hooks; their failure is unrecoverable for
// every task.
func (h *allocHooks) await(ctx context.Context) error {
	select {
	case <-h.prerunDone:
	case <-ctx.Done():
		return ctx.Err()
	}
	if h.prerunErr != nil {
		return Fatal(h.prerunErr)
	}
	return nil
}

func (h *allocHooks) postrun() {
	h.postOnce.Do(func() {
		for _, hk := range h.hooks {
			if p, ok := hk.(AllocPostrunHook); ok {
				p.Postrun(h.req)
			}
		}
	})
}

// allDead reports whether every task of the allocation is dead for good:
// what postrun waits for, as opposed to a shutdown letting go of them.
func (ar *AllocRunner) allDead() bool {
	for _, tr := range ar.tasks {
		tr.mu.Lock()
		dead := tr.st.State == state.TaskStateDead
		tr.mu.Unlock()
		if !dead {
			return false
		}
	}
	return true
}
