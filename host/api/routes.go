package api

import (
	"fmt"
	"net/http"
)

// routes is the API's URL map, Nomad's paths where the concept is the same.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/v1/jobs", methods{http.MethodGet: s.listJobs, http.MethodPost: s.registerJob}.handler(s.log))
	mux.Handle("/v1/job/{id}", methods{http.MethodGet: s.getJob, http.MethodDelete: s.stopJob}.handler(s.log))
	mux.Handle("/v1/job/{id}/versions", methods{http.MethodGet: s.jobVersions}.handler(s.log))
	mux.Handle("/v1/job/{id}/revert", methods{http.MethodPost: s.revertJob, http.MethodPut: s.revertJob}.handler(s.log))
	mux.Handle("/v1/job/{id}/allocations", methods{http.MethodGet: s.jobAllocs}.handler(s.log))
	mux.Handle("/v1/allocation/{id}", methods{http.MethodGet: s.getAlloc}.handler(s.log))
	mux.Handle("/v1/client/fs/logs/{id}", methods{http.MethodGet: s.allocLogs}.handler(s.log))
	mux.Handle("/v1/plugins", methods{http.MethodGet: s.listPlugins}.handler(s.log))
	mux.Handle("/v1/plugin/csi/{id}", methods{http.MethodGet: s.getPlugin}.handler(s.log))
	// The registry, every plugin type alike (pluginhost's own; Nomad lists
	// CSI plugins only). /v1/plugin/csi/{id} above is more specific and
	// keeps its meaning.
	mux.Handle("/v1/registry/plugins", methods{http.MethodGet: s.listRegistered}.handler(s.log))
	mux.Handle("/v1/plugin/{type}/{name}", methods{http.MethodGet: s.getRegistered}.handler(s.log))
	mux.Handle("/v1/plugin/{type}/{name}/reattach", methods{http.MethodGet: s.getReattach}.handler(s.log))
	mux.Handle("/v1/plugin/{type}/{name}/broker", methods{http.MethodGet: s.holdBroker}.handler(s.log))
	mux.Handle("/v1/volumes", methods{http.MethodGet: s.listVolumes}.handler(s.log))
	mux.Handle("/v1/volumes/external", methods{http.MethodGet: s.externalVolumes}.handler(s.log))
	mux.Handle("/v1/volumes/snapshot", methods{http.MethodGet: s.listSnapshots, http.MethodPost: s.createSnapshot,
		http.MethodPut: s.createSnapshot, http.MethodDelete: s.deleteSnapshot}.handler(s.log))
	mux.Handle("/v1/volume/csi/{id}", methods{http.MethodGet: s.getVolume, http.MethodPut: s.registerVolume,
		http.MethodPost: s.registerVolume, http.MethodDelete: s.deregisterVolume}.handler(s.log))
	mux.Handle("/v1/volume/csi/{id}/create", methods{http.MethodPut: s.createVolume, http.MethodPost: s.createVolume}.handler(s.log))
	mux.Handle("/v1/volume/csi/{id}/delete", methods{http.MethodDelete: s.deleteVolume}.handler(s.log))
	mux.Handle("/v1/volume/csi/{id}/detach", methods{http.MethodDelete: s.detachVolume}.handler(s.log))
	mux.Handle("/v1/event/stream", methods{http.MethodGet: s.eventStream}.handler(s.log))
	mux.Handle("/v1/agent/self", methods{http.MethodGet: s.agentSelf}.handler(s.log))
	mux.Handle("/v1/agent/health", methods{http.MethodGet: s.agentHealth}.handler(s.log))
	mux.Handle("/v1/metrics", methods{http.MethodGet: s.metrics}.handler(s.log))
	if s.cfg.EnableDebug {
		debugRoutes(mux)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, s.log, http.StatusNotFound, ErrorResponse{
			Error: fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path),
		})
	})
	return mux
}
