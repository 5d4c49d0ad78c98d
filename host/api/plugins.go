package api

import (
	"fmt"
	"net/http"
)

func (s *Server) listPlugins(w http.ResponseWriter, r *http.Request) {
	// Only CSI plugins are listed, as in Nomad; an absent type means csi
	// so that `curl .../v1/plugins` works.
	if t := r.URL.Query().Get("type"); t != "" && t != "csi" {
		writeError(w, r, s.log, fieldErrorf("type", "%q is not a plugin type this agent lists (want csi)", t))
		return
	}
	plugins, err := s.cfg.Backend.Plugins(r.Context())
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("list plugins: %w", err))
		return
	}
	if plugins == nil {
		plugins = []*CSIPluginListStub{}
	}
	writeJSON(w, s.log, http.StatusOK, plugins)
}

func (s *Server) getPlugin(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	p, err := s.cfg.Backend.Plugin(r.Context(), id)
	if err == nil && p == nil {
		err = ErrNotFound
	}
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("plugin %q: %w", id, err))
		return
	}
	writeJSON(w, s.log, http.StatusOK, p)
}
