package apiserver

import (
	"context"
	"fmt"
	"net/http"

	"github.com/pluginhost/pluginhost/api"
)

// serveUI serves GET /ui/... from ServerConfig.UI.
func (s *Server) serveUI(w http.ResponseWriter, r *http.Request) {
	if s.cfg.UI == nil {
		writeError(w, r, s.log, fmt.Errorf("this agent serves no UI: %w", api.ErrNotFound))
		return
	}
	s.cfg.UI.ServeHTTP(w, r)
}

// redirectToUI sends a browser at / to the UI.
func redirectToUI(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/ui/", http.StatusFound)
}

// openUI serves POST /v1/agent/ui (management only): where a browser
// reaches the UI. A browser cannot reach a unix socket, so a server on one
// opens a listener on a loopback port of any number the first time it is
// asked, with the same Backend and tokens: every request there needs a
// token, like an agent's own TCP address, and the browser gets one only
// through a one-time token (`pluginhost ui`). It lives as long as this
// server.
func (s *Server) openUI(w http.ResponseWriter, r *http.Request) {
	if s.cfg.UI == nil {
		writeError(w, r, s.log, fmt.Errorf("this agent serves no UI: %w", api.ErrNotFound))
		return
	}
	if s.addr.Network == "tcp" {
		writeJSON(w, s.log, http.StatusOK, &api.UIListener{URL: "http://" + s.addr.Address + "/ui/"})
		return
	}
	if s.cfg.Tokens == nil {
		writeError(w, r, s.log, errNoTokens)
		return
	}
	ui, err := s.uiServer()
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, s.log, http.StatusOK, &api.UIListener{URL: "http://" + ui.addr.Address + "/ui/"})
}

// uiServer returns the loopback listener for the UI, opening it once.
func (s *Server) uiServer() (*Server, error) {
	s.uiMu.Lock()
	defer s.uiMu.Unlock()
	if s.ui != nil {
		return s.ui, nil
	}
	if s.uiClosed {
		return nil, fmt.Errorf("the agent is shutting down: %w", api.ErrUnavailable)
	}
	cfg := s.cfg
	cfg.Addr = "127.0.0.1:0"
	ui, err := NewServer(cfg)
	if err != nil {
		return nil, fmt.Errorf("open a loopback listener for the UI: %w", err)
	}
	s.ui, s.uiDone = ui, make(chan struct{})
	// Owned by this server: its base context ends at Shutdown, and
	// Shutdown waits for it (stopUI).
	go func(done chan<- struct{}) {
		defer close(done)
		if err := ui.Serve(s.baseCtx); err != nil {
			s.log.Warn("the UI's listener stopped", "error", err)
		}
	}(s.uiDone)
	s.log.Info("UI listening", "url", "http://"+ui.addr.Address+"/ui/")
	return ui, nil
}

// stopUI stops the UI's loopback listener, if one was opened, and waits for
// its Serve to return, so nothing of it outlives this server.
func (s *Server) stopUI(ctx context.Context) {
	s.uiMu.Lock()
	s.uiClosed = true
	ui, done := s.ui, s.uiDone
	s.uiMu.Unlock()
	if ui == nil {
		return
	}
	_ = ui.Shutdown(ctx)
	select {
	case <-done:
	case <-ctx.Done():
	}
}
