package apiserver

import (
	"context"
	"fmt"
	"net/http"

	"github.com/pluginhost/pluginhost/api"
)

// ReattachBackend is the part of a backend that hands out reattach
// records. It is optional: a backend without it answers 404.
type ReattachBackend interface {
	// PluginReattach is the reattach record of the plugin's active
	// instance; ErrNotFound (wrapped) when it has none, or when the active
	// instance is not a go-plugin launch.
	PluginReattach(ctx context.Context, pluginType, name string) (*api.PluginReattach, error)
}

func (s *Server) getReattach(w http.ResponseWriter, r *http.Request) {
	rb, ok := s.cfg.Backend.(ReattachBackend)
	if !ok {
		writeError(w, r, s.log, fmt.Errorf("this agent hands out no reattach records: %w", api.ErrNotFound))
		return
	}
	typ, name, ok := s.pluginPath(w, r)
	if !ok {
		return
	}
	out, err := rb.PluginReattach(r.Context(), typ, name)
	if err == nil && out == nil {
		err = api.ErrNotFound
	}
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("plugin %s/%s: %w", typ, name, err))
		return
	}
	writeJSON(w, s.log, http.StatusOK, out)
}
