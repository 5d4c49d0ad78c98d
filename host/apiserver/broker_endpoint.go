package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/pluginhost/pluginhost/api"
)

// The consumer side of a broker lease, and why there is one, is in package
// api (github.com/pluginhost/pluginhost/api, broker_lease.go).

// BrokerBackend is the part of a backend that holds broker leases. It is
// optional: a backend without it answers 404.
type BrokerBackend interface {
	// HoldBroker checks that allocID's registration of the plugin is the
	// launch with pid, calls held, and returns once ctx ends; if the agent
	// is not stopping it then restarts that launch, whose broker is closed.
	HoldBroker(ctx context.Context, pluginType, name, allocID string, pid int, held func()) error
}

func (s *Server) holdBroker(w http.ResponseWriter, r *http.Request) {
	bb, ok := s.cfg.Backend.(BrokerBackend)
	if !ok {
		writeError(w, r, s.log, fmt.Errorf("this agent holds no broker leases: %w", api.ErrNotFound))
		return
	}
	typ, name, ok := s.pluginPath(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	alloc := q.Get("alloc")
	pid, err := strconv.Atoi(q.Get("pid"))
	if alloc == "" || err != nil {
		writeError(w, r, s.log, fieldErrorf("alloc", "alloc and pid name the instance whose broker the lease is for"))
		return
	}
	rc := http.NewResponseController(w)
	err = bb.HoldBroker(r.Context(), typ, name, alloc, pid, func() {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		_ = rc.Flush()
	})
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("plugin %s/%s allocation %s: %w", typ, name, alloc, err))
	}
}
