package apiserver

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/pluginhost/pluginhost/api"
)

func (s *Server) allocLogs(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	q := r.URL.Query()
	var stderr bool
	switch t := q.Get("type"); t {
	case "", "stdout":
	case "stderr":
		stderr = true
	default:
		writeError(w, r, s.log, fieldErrorf("type", "%q is not a log type (want stdout or stderr)", t))
		return
	}
	follow, err := boolQuery(r, "follow")
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	alloc, ok := s.alloc(w, r, id)
	if !ok {
		return
	}
	task, err := pickTask(alloc, q.Get("task"))
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}

	w.Header().Set("Trailer", api.TrailerError)
	sw := &streamWriter{w: w, rc: http.NewResponseController(w)}
	err = s.cfg.Backend.AllocLogs(r.Context(), alloc.ID, task, stderr, follow, sw)
	switch {
	case err == nil:
		sw.start()
	case !sw.started:
		writeError(w, r, s.log, fmt.Errorf("logs of %s/%s: %w", alloc.ID, task, err))
	case r.Context().Err() != nil:
		// Client gone or shutting down: a followed stream ends this way.
	default:
		s.log.Warn("log stream failed", "alloc", alloc.ID, "task", task, "error", err)
		w.Header().Set(api.TrailerError, err.Error())
	}
}

// pickTask resolves the task query parameter: it may be omitted when the
// allocation has exactly one task, as with Nomad's CLI.
func pickTask(alloc *api.Allocation, task string) (string, error) {
	tasks := alloc.Tasks
	if len(tasks) == 0 {
		for name := range alloc.TaskStates {
			tasks = append(tasks, name)
		}
		slices.Sort(tasks)
	}
	if task == "" {
		switch len(tasks) {
		case 1:
			return tasks[0], nil
		case 0:
			return "", fieldErrorf("task", "allocation %s has no tasks", alloc.ID)
		default:
			return "", fieldErrorf("task", "allocation %s has several tasks; name one of: %s",
				alloc.ID, strings.Join(tasks, ", "))
		}
	}
	for _, t := range tasks {
		if t == task {
			return task, nil
		}
	}
	return "", &FieldError{Field: "task", Err: fmt.Errorf("allocation %s has no task %q (tasks: %s): %w",
		alloc.ID, task, strings.Join(tasks, ", "), api.ErrNotFound)}
}

// streamWriter sends the status line on the first write and flushes after
// every write, so that followed logs arrive as they are written.
type streamWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
}

func (s *streamWriter) start() {
	if s.started {
		return
	}
	s.started = true
	s.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	s.w.Header().Set("X-Content-Type-Options", "nosniff")
	s.w.WriteHeader(http.StatusOK)
}

func (s *streamWriter) Write(p []byte) (int, error) {
	s.start()
	n, err := s.w.Write(p)
	if err != nil {
		return n, fmt.Errorf("write log stream: %w", err)
	}
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return n, fmt.Errorf("flush log stream: %w", err)
	}
	return n, nil
}
