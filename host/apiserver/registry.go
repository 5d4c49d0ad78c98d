package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"regexp"

	"github.com/pluginhost/pluginhost/api"
)

// RegistryBackend is the part of a backend that lists the plugin registry,
// every plugin type alike. It is optional: a backend without it answers
// those paths with 404.
type RegistryBackend interface {
	// RegisteredPlugins lists every registered plugin, of pluginType or
	// of every type when it is "", and the plugins of types other than
	// CSI's that allocations meant to run declare but have not registered.
	RegisteredPlugins(ctx context.Context, pluginType string) ([]*api.PluginListStub, error)
	// RegisteredPlugin describes one; ErrNotFound when nothing is
	// registered under that type and name and no allocation meant to run
	// declares it.
	RegisteredPlugin(ctx context.Context, pluginType, name string) (*api.Plugin, error)
}

// registryNamePattern is what a plugin type or name in a path may be: the
// registry accepts more, but nothing the agent registers is outside it.
var registryNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

func (s *Server) registryBackend(w http.ResponseWriter, r *http.Request) (RegistryBackend, bool) {
	rb, ok := s.cfg.Backend.(RegistryBackend)
	if !ok {
		writeError(w, r, s.log, fmt.Errorf("this agent has no plugin registry: %w", api.ErrNotFound))
	}
	return rb, ok
}

func (s *Server) listRegistered(w http.ResponseWriter, r *http.Request) {
	rb, ok := s.registryBackend(w, r)
	if !ok {
		return
	}
	t := r.URL.Query().Get("type")
	if t != "" && !registryNamePattern.MatchString(t) {
		writeError(w, r, s.log, fieldErrorf("type", "%q is not a plugin type (letters, digits, '.', '_', '-')", t))
		return
	}
	out, err := rb.RegisteredPlugins(r.Context(), t)
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("list registered plugins: %w", err))
		return
	}
	if out == nil {
		out = []*api.PluginListStub{}
	}
	writeJSON(w, s.log, http.StatusOK, out)
}

func (s *Server) getRegistered(w http.ResponseWriter, r *http.Request) {
	rb, ok := s.registryBackend(w, r)
	if !ok {
		return
	}
	typ, name, ok := s.pluginPath(w, r)
	if !ok {
		return
	}
	p, err := rb.RegisteredPlugin(r.Context(), typ, name)
	if err == nil && p == nil {
		err = api.ErrNotFound
	}
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("plugin %s/%s: %w", typ, name, err))
		return
	}
	writeJSON(w, s.log, http.StatusOK, p)
}

// pluginPath is the {type} and {name} of a plugin route, checked; false
// when the answer (a 400 naming the field) is written.
func (s *Server) pluginPath(w http.ResponseWriter, r *http.Request) (typ, name string, ok bool) {
	typ, name = r.PathValue("type"), r.PathValue("name")
	if !registryNamePattern.MatchString(typ) {
		writeError(w, r, s.log, fieldErrorf("type", "%q is not a plugin type (letters, digits, '.', '_', '-')", typ))
		return "", "", false
	}
	if !registryNamePattern.MatchString(name) {
		writeError(w, r, s.log, fieldErrorf("name", "%q is not a plugin name (letters, digits, '.', '_', '-')", name))
		return "", "", false
	}
	return typ, name, true
}
