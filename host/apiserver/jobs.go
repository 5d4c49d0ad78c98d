package apiserver

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/jobspec"
)

// jobRegisterRequest is how the server decodes api.JobRegisterRequest: the
// same JSON, with the parsed job as the jobspec.Job the backend runs.
type jobRegisterRequest struct {
	Source   string       `json:",omitempty"`
	Filename string       `json:",omitempty"`
	Job      *jobspec.Job `json:",omitempty"`
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	jobs, err := s.cfg.Backend.Jobs(r.Context())
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("list jobs: %w", err))
		return
	}
	if jobs == nil {
		jobs = []*api.JobListStub{}
	}
	writeJSON(w, s.log, http.StatusOK, jobs)
}

func (s *Server) registerJob(w http.ResponseWriter, r *http.Request) {
	var req jobRegisterRequest
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
		resp = &api.JobRegisterResponse{JobID: job.ID}
	}
	writeJSON(w, s.log, http.StatusOK, resp)
}

// jobOf turns a register request into a job the backend can trust: a
// submitted JSON job is held to exactly the rules of a job file, through the
// same validator, so no input path is looser than the other.
func (s *Server) jobOf(req *jobRegisterRequest) (*jobspec.Job, error) {
	switch {
	case req.Source != "" && req.Job != nil:
		return nil, fieldErrorf("Job", "give either Source or Job, not both")
	case req.Source == "" && req.Job == nil:
		return nil, fieldErrorf("Source", "is empty: give a job file's text in Source or a parsed job in Job")
	case req.Job != nil:
		job := req.Job
		jobspec.Canonicalize(job)
		if err := jobspec.Validate(job); err != nil {
			return nil, invalidJob(err)
		}
		// Not a file on the agent's disk, whatever the submitter wrote.
		job.SourcePath = ""
		return job, nil
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

// invalidJob makes Validate's error a *FieldError on the first problem's
// field; the body's diagnostics list every problem with its own field.
func invalidJob(err error) error {
	var ve *jobspec.ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) == 0 {
		return &FieldError{Field: "Job", Err: err}
	}
	return &FieldError{Field: jobField(ve.Problems[0].Field), Err: &jobProblems{ve}}
}

// jobField is a job field path as a request field.
func jobField(path string) string {
	if path == "" {
		return "Job"
	}
	return "Job." + path
}

// jobProblems words a validation error by its first problem, since the
// FieldError around it names that problem's field.
type jobProblems struct {
	*jobspec.ValidationError
}

func (e *jobProblems) Error() string {
	first := e.Problems[0]
	msg := fmt.Sprintf("%s: %s", first.Summary, first.Detail)
	switch n := len(e.Problems) - 1; {
	case n == 1:
		msg += " (and 1 more problem, listed in diagnostics)"
	case n > 1:
		msg += fmt.Sprintf(" (and %d more problems, listed in diagnostics)", n)
	}
	return msg
}

func (e *jobProblems) Unwrap() error { return e.ValidationError }

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	job, err := s.cfg.Backend.Job(r.Context(), id)
	if err == nil && job == nil {
		err = api.ErrNotFound
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
	writeJSON(w, s.log, http.StatusOK, api.JobStopResponse{JobID: id, Purged: purge})
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
		allocs = []*api.AllocListStub{}
	}
	writeJSON(w, s.log, http.StatusOK, allocs)
}
