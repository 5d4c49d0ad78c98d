package apiserver

import (
	"fmt"
	"net/http"

	"github.com/pluginhost/pluginhost/api"
)

func (s *Server) getAlloc(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if alloc, ok := s.alloc(w, r, id); ok {
		writeJSON(w, s.log, http.StatusOK, alloc)
	}
}

// alloc asks the backend for an allocation by ID or prefix; on failure it
// has written the error response and returns false.
func (s *Server) alloc(w http.ResponseWriter, r *http.Request, id string) (*api.Allocation, bool) {
	alloc, err := s.cfg.Backend.Alloc(r.Context(), id)
	if err == nil && alloc == nil {
		err = api.ErrNotFound
	}
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("allocation %q: %w", id, err))
		return nil, false
	}
	return alloc, true
}
