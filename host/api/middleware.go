package api

import (
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/api"
)

// recorder remembers whether a handler has started its answer, so that the
// recover middleware knows whether a 500 can still be sent.
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach Flush on the real writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// withRecover turns a panicking handler into a logged 500 instead of a
// dropped connection, and logs every request at debug level.
func withRecover(log hclog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w}
		start := time.Now()
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					// The handler asked net/http to abort the
					// connection; honour it.
					panic(v)
				}
				log.Error("panic in handler", "method", r.Method, "path", r.URL.Path,
					"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if rec.status == 0 {
					writeJSON(rec, log, http.StatusInternalServerError,
						api.ErrorResponse{Error: fmt.Sprintf("internal error: %v", v)})
				}
			}
			log.Debug("request", "method", r.Method, "path", r.URL.Path,
				"status", rec.status, "duration", time.Since(start))
		}()
		next.ServeHTTP(rec, r)
	})
}

// methods dispatches on the request method and answers 405 in JSON, with an
// Allow header, for the others; the stock mux would answer in plain text.
type methods map[string]http.HandlerFunc

func (m methods) handler(log hclog.Logger) http.Handler {
	allow := ""
	for _, k := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		if _, ok := m[k]; ok {
			if allow != "" {
				allow += ", "
			}
			allow += k
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, ok := m[r.Method]; ok {
			h(w, r)
			return
		}
		w.Header().Set("Allow", allow)
		writeJSON(w, log, http.StatusMethodNotAllowed, api.ErrorResponse{
			Error: fmt.Sprintf("method %s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allow),
			Field: "method",
		})
	})
}
