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
	if err := ensureSocketDir(req.SocketDir); err != nil {
		return err
	}
	if u := req.User; u != nil {
		if err := giveSocketDir(req.SocketDir, u.UID, u.GID); err != nil {
			return err
		}
	}
	removed, err := RemoveStaleSockets(req.SocketDir)
	for _, p := range removed {
		req.Logger.Info("removed stale socket", "path", p)
	}
	return err
}
