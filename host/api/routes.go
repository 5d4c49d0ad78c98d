package api

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// routes is the API's URL map, Nomad's paths where the concept is the same.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/v1/jobs", methods{http.MethodGet: s.listJobs, http.MethodPost: s.registerJob}.handler(s.log))
	mux.Handle("/v1/job/{id}", methods{http.MethodGet: s.getJob, http.MethodDelete: s.stopJob}.handler(s.log))
	mux.Handle("/v1/job/{id}/allocations", methods{http.MethodGet: s.jobAllocs}.handler(s.log))
	mux.Handle("/v1/allocation/{id}", methods{http.MethodGet: s.getAlloc}.handler(s.log))
	mux.Handle("/v1/client/fs/logs/{id}", methods{http.MethodGet: s.allocLogs}.handler(s.log))
	mux.Handle("/v1/plugins", methods{http.MethodGet: s.listPlugins}.handler(s.log))
	mux.Handle("/v1/plugin/csi/{id}", methods{http.MethodGet: s.getPlugin}.handler(s.log))
	mux.Handle("/v1/event/stream", methods{http.MethodGet: s.eventStream}.handler(s.log))
	mux.Handle("/v1/agent/self", methods{http.MethodGet: s.agentSelf}.handler(s.log))
	mux.Handle("/v1/agent/health", methods{http.MethodGet: s.agentHealth}.handler(s.log))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, s.log, http.StatusNotFound, ErrorResponse{
			Error: fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path),
		})
	})
	return mux
}

// maxIDLen bounds path IDs: nothing legitimate is longer, and it keeps
// garbage out of logs and backend lookups.
const maxIDLen = 256

// pathID returns the {id} path value, checked.
func pathID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	switch {
	case strings.TrimSpace(id) == "":
		return "", fieldErrorf("id", "is empty")
	case len(id) > maxIDLen:
		return "", fieldErrorf("id", "is %d bytes long, over the %d-byte limit", len(id), maxIDLen)
	case strings.ContainsFunc(id, func(c rune) bool { return c < 0x20 || c == 0x7f }):
		return "", fieldErrorf("id", "contains control characters")
	}
	return id, nil
}

// boolQuery parses an optional boolean query parameter; absent is false and
// an empty value (?follow) is true, as with Nomad.
func boolQuery(r *http.Request, name string) (bool, error) {
	q := r.URL.Query()
	if !q.Has(name) {
		return false, nil
	}
	v := q.Get(name)
	if v == "" {
		return true, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fieldErrorf(name, "%q is not a boolean (want true or false)", v)
	}
	return b, nil
}
