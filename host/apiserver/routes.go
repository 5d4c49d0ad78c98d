package apiserver

import (
	"fmt"
	"net/http"
	"net/http/pprof"
	"slices"

	"github.com/pluginhost/pluginhost/api"
)

// route is one entry of the API's URL map.
type route struct {
	pattern string
	// methods are the methods the route answers (others get 405).
	methods []string
	handler http.Handler
	// management routes are refused to the read token, GETs included:
	// they show secrets or the agent's memory.
	management bool
	// public routes need no token on TCP (the UI's pages, the one-time
	// token's exchange); the guard's Host, Origin and body checks still
	// apply.
	public bool
}

// routeTable is the API's URL map, Nomad's paths where the concept is the
// same. routes serves exactly this table, and the security tests walk it,
// so a route added here is covered by them without being named.
func (s *Server) routeTable() []route {
	m := func(pattern string, ms methods) route {
		var names []string
		for k := range ms {
			names = append(names, k)
		}
		slices.Sort(names)
		return route{pattern: pattern, methods: names, handler: ms.handler(s.log)}
	}
	mgmt := func(r route) route { r.management = true; return r }
	rt := []route{
		m("/v1/jobs", methods{http.MethodGet: s.listJobs, http.MethodPost: s.registerJob}),
		m("/v1/job/{id}", methods{http.MethodGet: s.getJob, http.MethodDelete: s.stopJob}),
		m("/v1/job/{id}/versions", methods{http.MethodGet: s.jobVersions}),
		m("/v1/job/{id}/revert", methods{http.MethodPost: s.revertJob, http.MethodPut: s.revertJob}),
		m("/v1/job/{id}/allocations", methods{http.MethodGet: s.jobAllocs}),
		m("/v1/allocation/{id}", methods{http.MethodGet: s.getAlloc}),
		m("/v1/client/fs/logs/{id}", methods{http.MethodGet: s.allocLogs}),
		m("/v1/client/allocation/{id}/stats", methods{http.MethodGet: s.allocStats}),
		m("/v1/plugins", methods{http.MethodGet: s.listPlugins}),
		m("/v1/plugin/csi/{id}", methods{http.MethodGet: s.getPlugin}),
		// The registry, every plugin type alike (pluginhost's own; Nomad
		// lists CSI plugins only). /v1/plugin/csi/{id} above is more
		// specific and keeps its meaning.
		m("/v1/registry/plugins", methods{http.MethodGet: s.listRegistered}),
		m("/v1/plugin/{type}/{name}", methods{http.MethodGet: s.getRegistered}),
		// A consumer's way into a hosted plugin (go-plugin's reattach) and
		// the lease that keeps its callback broker: management only, since
		// the lease's end restarts the plugin for everyone.
		mgmt(m("/v1/plugin/{type}/{name}/reattach", methods{http.MethodGet: s.getReattach})),
		mgmt(m("/v1/plugin/{type}/{name}/broker", methods{http.MethodGet: s.holdBroker})),
		m("/v1/volumes", methods{http.MethodGet: s.listVolumes}),
		m("/v1/volumes/external", methods{http.MethodGet: s.externalVolumes}),
		m("/v1/volumes/snapshot", methods{http.MethodGet: s.listSnapshots, http.MethodPost: s.createSnapshot,
			http.MethodPut: s.createSnapshot, http.MethodDelete: s.deleteSnapshot}),
		m("/v1/volume/csi/{id}", methods{http.MethodGet: s.getVolume, http.MethodPut: s.registerVolume,
			http.MethodPost: s.registerVolume, http.MethodDelete: s.deregisterVolume}),
		m("/v1/volume/csi/{id}/create", methods{http.MethodPut: s.createVolume, http.MethodPost: s.createVolume}),
		m("/v1/volume/csi/{id}/delete", methods{http.MethodDelete: s.deleteVolume}),
		m("/v1/volume/csi/{id}/detach", methods{http.MethodDelete: s.detachVolume}),
		m("/v1/event/stream", methods{http.MethodGet: s.eventStream}),
		m("/v1/agent/self", methods{http.MethodGet: s.agentSelf}),
		m("/v1/agent/health", methods{http.MethodGet: s.agentHealth}),
		m("/v1/metrics", methods{http.MethodGet: s.metrics}),
	}
	acl := []route{
		m("/v1/acl/tokens", methods{http.MethodGet: s.listTokens}),
		m("/v1/acl/tokens/rotate", methods{http.MethodPost: s.rotateToken, http.MethodPut: s.rotateToken}),
		m("/v1/agent/ui", methods{http.MethodPost: s.openUI, http.MethodPut: s.openUI}),
		// A management login for a browser; a read token's holder signs
		// in with that token instead (the read token may only GET).
		m("/v1/acl/token/onetime", methods{http.MethodPost: s.createOneTime, http.MethodPut: s.createOneTime}),
	}
	for i := range acl {
		acl[i].management = true
	}
	rt = append(rt, acl...)
	pub := func(r route) route { r.public = true; return r }
	rt = append(rt,
		pub(m("/v1/acl/token/onetime/exchange", methods{http.MethodPost: s.exchangeOneTime, http.MethodPut: s.exchangeOneTime})),
		pub(m("/ui/", methods{http.MethodGet: s.serveUI, http.MethodHead: s.serveUI})),
		pub(m("/{$}", methods{http.MethodGet: redirectToUI, http.MethodHead: redirectToUI})),
	)
	if s.cfg.EnableDebug {
		rt = append(rt, s.debugRoutes()...)
	}
	return append(rt, route{pattern: "/", methods: []string{http.MethodGet},
		handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, s.log, http.StatusNotFound, api.ErrorResponse{
				Error: fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path),
			})
		})})
}

// routes serves routeTable behind the guard.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	public := http.NewServeMux()
	for _, rt := range s.routeTable() {
		h := rt.handler
		if rt.management {
			h = s.requireManagement(h)
		}
		mux.Handle(rt.pattern, h)
		if rt.public {
			public.Handle(rt.pattern, h)
		}
	}
	s.public = public
	return s.guard(mux)
}

// debugRoutes are Go's profiler under /debug/pprof/ (ServerConfig.EnableDebug,
// Nomad's enable_debug), for the management token only: profiles show the
// agent's memory. The handlers are mounted on the server's own mux:
// net/http/pprof also registers them on http.DefaultServeMux, which the
// agent never serves.
func (s *Server) debugRoutes() []route {
	get := []string{http.MethodGet}
	return []route{
		{pattern: "/debug/pprof/", methods: get, handler: http.HandlerFunc(pprof.Index), management: true},
		{pattern: "/debug/pprof/cmdline", methods: get, handler: http.HandlerFunc(pprof.Cmdline), management: true},
		{pattern: "/debug/pprof/profile", methods: get, handler: http.HandlerFunc(pprof.Profile), management: true},
		// symbol also reads addresses from a POST body.
		{pattern: "/debug/pprof/symbol", methods: []string{http.MethodGet, http.MethodPost},
			handler: http.HandlerFunc(pprof.Symbol), management: true},
		{pattern: "/debug/pprof/trace", methods: get, handler: http.HandlerFunc(pprof.Trace), management: true},
	}
}
