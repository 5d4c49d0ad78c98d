package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
	"github.com/pluginhost/pluginhost/host/volumespec"
)

// writeError turns err into a status code and JSON body. It is the only place
// that knows how backend errors map to HTTP.
func writeError(w http.ResponseWriter, r *http.Request, log hclog.Logger, err error) {
	resp := api.ErrorResponse{Error: err.Error()}
	status := http.StatusInternalServerError

	var fe *FieldError
	var ae *AmbiguousError
	var mbe *http.MaxBytesError
	if errors.As(err, &fe) {
		resp.Field = fe.Field
		resp.Diagnostics = diagnosticsOf(fe.Err)
	}
	switch {
	case r.Context().Err() != nil:
		// The client is gone or the server is shutting down: nobody reads
		// the answer, so do not log it as a failure.
		log.Debug("request ended early", "method", r.Method, "path", r.URL.Path, "error", err)
		status = http.StatusServiceUnavailable
	case errors.As(err, &mbe):
		status = http.StatusRequestEntityTooLarge
		resp.Field = "body"
		resp.Error = fmt.Sprintf("request body is over the %d-byte limit", mbe.Limit)
	case errors.Is(err, api.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, api.ErrUnavailable):
		status = http.StatusServiceUnavailable
	case fe != nil:
		status = http.StatusBadRequest
	case errors.As(err, &ae):
		status = http.StatusBadRequest
		resp.Field = "id"
		resp.Matches = ae.Matches
	case errors.Is(err, context.DeadlineExceeded):
		status = http.StatusGatewayTimeout
	default:
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	writeJSON(w, log, status, resp)
}

// diagnosticsOf extracts HCL diagnostics from a parse error, or problems
// from a job's validation error, so that clients can show each problem with
// its location or field.
func diagnosticsOf(err error) []api.Diagnostic {
	var ve *jobspec.ValidationError
	if errors.As(err, &ve) {
		out := make([]api.Diagnostic, 0, len(ve.Problems))
		for _, p := range ve.Problems {
			out = append(out, api.Diagnostic{Summary: p.Summary, Detail: p.Detail, Field: jobField(p.Field)})
		}
		return out
	}
	var vve *volumespec.ValidationError
	if errors.As(err, &vve) {
		out := make([]api.Diagnostic, 0, len(vve.Problems))
		for _, p := range vve.Problems {
			f := "Volumes[0]"
			if p.Field != "" {
				f += "." + p.Field
			}
			out = append(out, api.Diagnostic{Summary: p.Summary, Detail: p.Detail, Field: f})
		}
		return out
	}
	var diags hcl.Diagnostics
	var de *hclstrict.DiagnosticsError
	if errors.As(err, &de) {
		diags = de.Diags
	} else if !errors.As(err, &diags) {
		var d *hcl.Diagnostic
		if !errors.As(err, &d) {
			return nil
		}
		diags = hcl.Diagnostics{d}
	}
	out := make([]api.Diagnostic, 0, len(diags))
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		dg := api.Diagnostic{Summary: d.Summary, Detail: d.Detail}
		if d.Subject != nil {
			dg.Range = fmt.Sprintf("%s:%d:%d", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column)
		}
		out = append(out, dg)
	}
	return out
}

func writeJSON(w http.ResponseWriter, log hclog.Logger, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Only a programming error (an unencodable type) gets here.
		log.Error("cannot encode response", "error", err)
		status = http.StatusInternalServerError
		body = []byte(`{"error":"cannot encode response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
