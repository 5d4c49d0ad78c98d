package api

import "errors"

// ErrNotFound is wrapped by the server's errors about an unknown job,
// allocation, task or plugin; the server answers 404.
var ErrNotFound = errors.New("not found")

// ErrUnavailable is wrapped by the server's errors about something that
// exists but cannot be had this moment, such as a plugin whose instance is
// restarting; the server answers 503, and asking again later is right.
var ErrUnavailable = errors.New("temporarily unavailable")

// ErrorResponse is the JSON body of every non-2xx answer.
type ErrorResponse struct {
	Error string `json:"error"`
	// Field names the request field at fault, for 4xx answers.
	Field string `json:"field,omitempty"`
	// Matches lists the IDs an ambiguous prefix matched.
	Matches []string `json:"matches,omitempty"`
	// Diagnostics are a job file's parse errors, one per problem.
	Diagnostics []Diagnostic `json:"diagnostics,omitempty"`
}

// Diagnostic is one problem of a submitted job: a job file's parse error
// with its location, or a JSON job's validation problem with its field.
type Diagnostic struct {
	Summary string
	Detail  string `json:",omitempty"`
	// Range is "file:line:col", the form editors jump to.
	Range string `json:",omitempty"`
	// Field is the request field at fault, such as
	// "Job.TaskGroups[0].Tasks[0].Name".
	Field string `json:",omitempty"`
}
