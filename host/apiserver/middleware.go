package apiserver

import (
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/api"
)

// recorder remembers whether a handler has started its answer, so that the
// recover middleware knows whether a 500 can still be sent. It also moves
// the connection's write deadline to writeTimeout from now before every
// write and flush: a reader that stops reading fails the write then, while
// a stream that keeps being read lasts as long as it likes, which a
// server-wide WriteTimeout (fixed from the request's start) would not
// allow.
type recorder struct {
	http.ResponseWriter
	// conn is the net/http writer's deadline and flush methods (what
	// http.ResponseController would call, without allocating one per
	// request); nil for a writer without them, such as a test's.
	conn         connWriter
	writeTimeout time.Duration
	status       int
}

type connWriter interface {
	SetWriteDeadline(time.Time) error
	FlushError() error
}

// extend moves the write deadline.
func (r *recorder) extend() {
	if r.conn != nil {
		_ = r.conn.SetWriteDeadline(time.Now().Add(r.writeTimeout))
	}
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.extend()
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.extend()
	return r.ResponseWriter.Write(p)
}

// FlushError is what http.ResponseController.Flush calls, so that a
// handler's flush gets a fresh deadline too.
func (r *recorder) FlushError() error {
	if r.conn == nil {
		return http.NewResponseController(r.ResponseWriter).Flush()
	}
	r.extend()
	return r.conn.FlushError()
}

// Unwrap lets http.ResponseController reach the real writer's other
// methods.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// withRecover turns a panicking handler into a logged 500 instead of a
// dropped connection, logs every request at debug level, and bounds the
// answer's writes by writeTimeout each (see recorder).
func withRecover(log hclog.Logger, writeTimeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w, writeTimeout: writeTimeout}
		rec.conn, _ = w.(connWriter)
		// A deadline left by the connection's previous request may have
		// passed: a "100 Continue" or a header written only when the
		// handler returns must not fail on it.
		rec.extend()
		start := time.Now()
		defer func() {
			// net/http writes what is buffered after the handler
			// returns; give that its own deadline.
			rec.extend()
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
