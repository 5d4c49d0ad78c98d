package taskrunner

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// validateHook refuses a task the runner cannot run, before anything is
// created on disk; its errors are fatal, retrying cannot help.
type validateHook struct{ cfg *Config }

func (h *validateHook) Name() string { return "validate" }

func (h *validateHook) Prestart(_ context.Context, req *HookRequest) error {
	t := req.Task
	if _, ok := h.cfg.Drivers[t.Driver]; !ok {
		return Fatal(fmt.Errorf("task %q: driver %q is not available on this agent", t.Name, t.Driver))
	}
	if t.Config == nil || t.Config.Command == "" {
		return Fatal(errors.New("task " + t.Name + ": config.command is required"))
	}
	if _, err := killSignal(t.KillSignal); err != nil {
		return Fatal(err)
	}
	return nil
}

// killSignal parses kill_signal ("" means SIGINT, Nomad's default).
func killSignal(name string) (unix.Signal, error) {
	if name == "" {
		return unix.SIGINT, nil
	}
	s := unix.SignalNum(name)
	if s == 0 {
		return 0, fmt.Errorf("kill_signal %q is not a signal name", name)
	}
	return s, nil
}
