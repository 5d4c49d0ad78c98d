package taskrunner

import (
	"context"
)

// socketHook gives the allocation its control socket directory and clears
// sockets left by dead processes before each launch, so a plugin never binds
// next to (or a client never dials) a dead socket.
type socketHook struct{}

func (socketHook) Name() string { return "socket_dir" }

func (socketHook) Prestart(_ context.Context, req *HookRequest) error {
	d, err := openTaskSocketDir(req.SocketDir, req.User)
	if err != nil {
		return err
	}
	defer d.Close()
	removed, err := removeStaleSockets(d)
	for _, p := range removed {
		req.Logger.Info("removed stale socket", "path", p)
	}
	return err
}
