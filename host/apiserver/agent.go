package apiserver

import (
	"fmt"
	"net/http"

	"github.com/pluginhost/pluginhost/api"
)

func (s *Server) agentSelf(w http.ResponseWriter, r *http.Request) {
	self, err := s.cfg.Backend.Self(r.Context())
	if err == nil && self == nil {
		err = fmt.Errorf("backend returned no agent info")
	}
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("agent self: %w", err))
		return
	}
	out := *self
	if out.Addr == "" {
		out.Addr = s.Addr()
	}
	writeJSON(w, s.log, http.StatusOK, out)
}

// agentHealth answers 503 until restored plugins are fingerprinted, so that a
// supervisor (or a test) can wait for readiness instead of guessing.
func (s *Server) agentHealth(w http.ResponseWriter, r *http.Request) {
	self, err := s.cfg.Backend.Self(r.Context())
	if err == nil && self == nil {
		err = fmt.Errorf("backend returned no agent info")
	}
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("agent health: %w", err))
		return
	}
	if !self.Ready {
		writeJSON(w, s.log, http.StatusServiceUnavailable, api.AgentHealth{
			Message: "agent is starting: restored plugins are not fingerprinted yet",
		})
		return
	}
	writeJSON(w, s.log, http.StatusOK, api.AgentHealth{Ready: true, Message: "ok"})
}
