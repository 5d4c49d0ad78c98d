package apiserver

import (
	"fmt"
	"net/http"

	"github.com/pluginhost/pluginhost/api"
)

func (s *Server) jobVersions(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	versions, err := s.cfg.Backend.JobVersions(r.Context(), id)
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("versions of job %q: %w", id, err))
		return
	}
	if versions == nil {
		versions = []*api.Job{}
	}
	writeJSON(w, s.log, http.StatusOK, api.JobVersionsResponse{Versions: versions})
}

func (s *Server) revertJob(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	var req api.JobRevertRequest
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if req.JobID != "" && req.JobID != id {
		writeError(w, r, s.log, fieldErrorf("JobID", "%q does not match the job %q in the path", req.JobID, id))
		return
	}
	resp, err := s.cfg.Backend.RevertJob(r.Context(), id, req.JobVersion)
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("revert job %q to version %d: %w", id, req.JobVersion, err))
		return
	}
	if resp == nil {
		resp = &api.JobRegisterResponse{JobID: id}
	}
	writeJSON(w, s.log, http.StatusOK, resp)
}
