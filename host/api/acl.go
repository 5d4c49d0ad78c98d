package api

import (
	"fmt"
	"net/http"
)

// ACLToken is one of the agent's tokens. Only /v1/acl/tokens answers with
// SecretID, and only to the management token or the unix socket.
type ACLToken struct {
	// Type is "management" or "read".
	Type     string
	SecretID string
	// Source is "generated" (kept in the data dir; rotatable) or "config"
	// (the agent config's acl block).
	Source string
}

// ACLTokens is the body of GET /v1/acl/tokens and of a rotation's answer.
type ACLTokens struct {
	Tokens []*ACLToken
}

// ACLTokenRotateRequest is the body of POST /v1/acl/tokens/rotate.
type ACLTokenRotateRequest struct {
	// Type is the token to replace: "management" or "read".
	Type string
}

// errNoTokens: the server was built without ServerConfig.Tokens.
var errNoTokens = fmt.Errorf("this agent keeps no tokens: %w", ErrNotFound)

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
	var req ACLTokenRotateRequest
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
