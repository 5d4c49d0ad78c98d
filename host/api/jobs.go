package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/pluginhost/pluginhost/host/jobspec"
)

// JobRegisterRequest is the body of POST /v1/jobs: either a job file's HCL
// source, parsed by the agent so that errors carry file:line:col, or an
// already parsed job.
type JobRegisterRequest struct {
	// Source is the job file's text.
	Source string `json:",omitempty"`
	// Filename names Source in diagnostics; "job.hcl" if empty.
	Filename string `json:",omitempty"`
	// Job is a parsed job; exclusive with Source.
	Job *jobspec.Job `json:",omitempty"`
}

// JobStopResponse answers DELETE /v1/job/<id>.
type JobStopResponse struct {
	JobID  string
	Purged bool
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	jobs, err := s.cfg.Backend.Jobs(r.Context())
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("list jobs: %w", err))
		return
	}
	if jobs == nil {
		jobs = []*JobListStub{}
	}
	writeJSON(w, s.log, http.StatusOK, jobs)
}

func (s *Server) registerJob(w http.ResponseWriter, r *http.Request) {
	var req JobRegisterRequest
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	job, err := s.jobOf(&req)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	resp, err := s.cfg.Backend.RunJob(r.Context(), job)
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("run job %q: %w", job.ID, err))
		return
	}
	if resp == nil {
		resp = &JobRegisterResponse{JobID: job.ID}
	}
	writeJSON(w, s.log, http.StatusOK, resp)
}

// jobOf turns a register request into a job the backend can trust to be
// structurally whole (no nil groups or tasks, names set); the rules about
// what a job may contain are the parser's and the backend's.
func (s *Server) jobOf(req *JobRegisterRequest) (*jobspec.Job, error) {
	switch {
	case req.Source != "" && req.Job != nil:
		return nil, fieldErrorf("Job", "give either Source or Job, not both")
	case req.Source == "" && req.Job == nil:
		return nil, fieldErrorf("Source", "is empty: give a job file's text in Source or a parsed job in Job")
	case req.Job != nil:
		if err := checkJob(req.Job); err != nil {
			return nil, err
		}
		return req.Job, nil
	}
	name := req.Filename
	if name == "" {
		name = "job.hcl"
	}
	job, err := s.cfg.ParseJob([]byte(req.Source), name)
	if err != nil {
		return nil, &FieldError{Field: "Source", Err: err}
	}
	if job == nil {
		return nil, fieldErrorf("Source", "%s holds no job", name)
	}
	// A submitted file is not on the agent's disk: do not let its name
	// pose as a path the agent could re-read.
	job.SourcePath = ""
	return job, nil
}

func checkJob(job *jobspec.Job) error {
	if strings.TrimSpace(job.ID) == "" {
		return fieldErrorf("Job.ID", "is empty")
	}
	if len(job.TaskGroups) == 0 {
		return fieldErrorf("Job.TaskGroups", "job %q has no groups", job.ID)
	}
	for i, tg := range job.TaskGroups {
		f := fmt.Sprintf("Job.TaskGroups[%d]", i)
		if tg == nil {
			return fieldErrorf(f, "is null")
		}
		if strings.TrimSpace(tg.Name) == "" {
			return fieldErrorf(f+".Name", "is empty")
		}
		if len(tg.Tasks) == 0 {
			return fieldErrorf(f+".Tasks", "group %q has no tasks", tg.Name)
		}
		for j, t := range tg.Tasks {
			tf := fmt.Sprintf("%s.Tasks[%d]", f, j)
			if t == nil {
				return fieldErrorf(tf, "is null")
			}
			if strings.TrimSpace(t.Name) == "" {
				return fieldErrorf(tf+".Name", "is empty")
			}
			if strings.TrimSpace(t.Driver) == "" {
				return fieldErrorf(tf+".Driver", "task %q has no driver", t.Name)
			}
		}
	}
	return nil
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	job, err := s.cfg.Backend.Job(r.Context(), id)
	if err == nil && job == nil {
		err = ErrNotFound
	}
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("job %q: %w", id, err))
		return
	}
	writeJSON(w, s.log, http.StatusOK, job)
}

func (s *Server) stopJob(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	purge, err := boolQuery(r, "purge")
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if err := s.cfg.Backend.StopJob(r.Context(), id, purge); err != nil {
		writeError(w, r, s.log, fmt.Errorf("stop job %q: %w", id, err))
		return
	}
	writeJSON(w, s.log, http.StatusOK, JobStopResponse{JobID: id, Purged: purge})
}

func (s *Server) jobAllocs(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	allocs, err := s.cfg.Backend.Allocs(r.Context(), id)
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("allocations of job %q: %w", id, err))
		return
	}
	if allocs == nil {
		allocs = []*AllocListStub{}
	}
	writeJSON(w, s.log, http.StatusOK, allocs)
}
