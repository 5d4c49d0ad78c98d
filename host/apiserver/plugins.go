package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/pluginhost/pluginhost/api"
)

// listPlugins is Nomad's GET /v1/plugins?type=csi, and without a type (or
// with another type) every plugin the agent knows, CSI plugins as one row
// each (not one per registry type) and the others as the registry backend
// lists them.
func (s *Server) listPlugins(w http.ResponseWriter, r *http.Request) {
	t := r.URL.Query().Get("type")
	if t == api.PluginTypeCSI {
		plugins, err := s.cfg.Backend.Plugins(r.Context())
		if err != nil {
			writeError(w, r, s.log, fmt.Errorf("list plugins: %w", err))
			return
		}
		if plugins == nil {
			plugins = []*api.CSIPluginListStub{}
		}
		writeJSON(w, s.log, http.StatusOK, plugins)
		return
	}
	if t != "" && (!registryNamePattern.MatchString(t) || isCSIRegistryType(t)) {
		writeError(w, r, s.log, fieldErrorf("type", "%q is not a plugin type this agent lists (csi, or a type that is not CSI's: letters, digits, '.', '_', '-')", t))
		return
	}
	out, err := s.allPlugins(r.Context(), t)
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("list plugins: %w", err))
		return
	}
	writeJSON(w, s.log, http.StatusOK, out)
}

// allPlugins lists the plugins of pluginType, or of every type when "".
func (s *Server) allPlugins(ctx context.Context, pluginType string) ([]*api.PluginStatusListStub, error) {
	out := []*api.PluginStatusListStub{}
	if pluginType == "" {
		plugins, err := s.cfg.Backend.Plugins(ctx)
		if err != nil {
			return nil, err
		}
		for _, p := range plugins {
			out = append(out, &api.PluginStatusListStub{ID: p.ID, Type: api.PluginTypeCSI, CSIPluginListStub: p})
		}
	}
	// A backend without a registry has CSI plugins only.
	if rb, ok := s.cfg.Backend.(RegistryBackend); ok {
		others, err := rb.RegisteredPlugins(ctx, pluginType)
		if err != nil {
			return nil, fmt.Errorf("registry: %w", err)
		}
		for _, p := range others {
			if isCSIRegistryType(p.Type) {
				continue // listed above, once per plugin
			}
			out = append(out, &api.PluginStatusListStub{ID: p.Type + "/" + p.Name, Type: p.Type, PluginListStub: p})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Type != out[j].Type {
			return out[i].Type < out[j].Type
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// isCSIRegistryType: the registry's CSI types (csi-controller, csi-node);
// the job parser keeps every other plugin type from starting with "csi".
func isCSIRegistryType(t string) bool { return strings.HasPrefix(t, "csi") }

func (s *Server) getPlugin(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	p, err := s.cfg.Backend.Plugin(r.Context(), id)
	if err == nil && p == nil {
		err = api.ErrNotFound
	}
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("plugin %q: %w", id, err))
		return
	}
	writeJSON(w, s.log, http.StatusOK, p)
}
