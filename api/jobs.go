package api

// JobRegisterRequest is the body of POST /v1/jobs: either a job file's HCL
// source, parsed by the agent so that errors carry file:line:col, or an
// already parsed job.
type JobRegisterRequest struct {
	// Source is the job file's text.
	Source string `json:",omitempty"`
	// Filename names Source in diagnostics; "job.hcl" if empty.
	Filename string `json:",omitempty"`
	// Job is a parsed job, exclusive with Source: a value whose JSON is
	// that of the agent's job spec (host/jobspec.Job, whose field names
	// are Nomad's). The agent holds it to exactly the rules of a job file.
	// It is not typed here so that this package needs no job-spec code;
	// most programs submit Source.
	Job any `json:",omitempty"`
}

// JobVersionsResponse answers GET /v1/job/<id>/versions: the kept versions
// of a job, newest first, as Nomad's endpoint of the same name.
type JobVersionsResponse struct {
	Versions []*Job
}

// JobRevertRequest is the body of POST /v1/job/<id>/revert.
type JobRevertRequest struct {
	JobID      string
	JobVersion uint64
}

// JobStopResponse answers DELETE /v1/job/<id>.
type JobStopResponse struct {
	JobID  string
	Purged bool
}
