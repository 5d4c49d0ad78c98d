package api

import (
	"fmt"
	"net/http"
)

func (s *Server) getAlloc(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	alloc, err := s.cfg.Backend.Alloc(r.Context(), id)
	if err == nil && alloc == nil {
		err = ErrNotFound
	}
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("allocation %q: %w", id, err))
		return
	}
	writeJSON(w, s.log, http.StatusOK, alloc)
}
