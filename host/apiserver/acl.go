package apiserver

import (
	"fmt"
	"net/http"

	"github.com/pluginhost/pluginhost/api"
)

// errNoTokens: the server was built without ServerConfig.Tokens.
var errNoTokens = fmt.Errorf("this agent keeps no tokens: %w", api.ErrNotFound)

// listTokens serves GET /v1/acl/tokens (management only).
func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Tokens == nil {
		writeError(w, r, s.log, errNoTokens)
		return
	}
	writeJSON(w, s.log, http.StatusOK, s.cfg.Tokens.List())
}

// rotateToken serves POST /v1/acl/tokens/rotate (management only): the old
// token stops working before the answer is sent.
func (s *Server) rotateToken(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Tokens == nil {
		writeError(w, r, s.log, errNoTokens)
		return
	}
	var req api.ACLTokenRotateRequest
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if err := s.cfg.Tokens.Rotate(req.Type); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	s.log.Info("token rotated", "type", req.Type)
	writeJSON(w, s.log, http.StatusOK, s.cfg.Tokens.List())
}
