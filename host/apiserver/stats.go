package apiserver

import (
	"fmt"
	"net/http"

	"github.com/pluginhost/pluginhost/api"
)

func (s *Server) allocStats(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	// The allocation is resolved first, as GET /v1/allocation/<id> does
	// it: an unknown or ambiguous ID gets the same answer there and here.
	alloc, ok := s.alloc(w, r, id)
	if !ok {
		return
	}
	usage, err := s.cfg.Backend.AllocStats(r.Context(), alloc.ID)
	if err == nil && usage == nil {
		err = api.ErrNotFound
	}
	if err != nil {
		// The allocation may have been collected since it was resolved.
		writeError(w, r, s.log, fmt.Errorf("allocation %q: %w", alloc.ID, err))
		return
	}
	writeJSON(w, s.log, http.StatusOK, usage)
}
