package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

var topics = []string{api.TopicAllocation, api.TopicTask, api.TopicJob, api.TopicPlugin, api.TopicRegistry, api.TopicAgent, api.TopicVolume}

// eventStream writes one JSON event per line, and flushes whenever no more
// events are queued (a burst goes out in one flush; an idle stream's last
// event is never held back), until the client goes away, the server shuts
// down or the backend closes the channel.
// The status line is sent only after the backend subscription exists, so a
// client that has its response headers will see every later event: `job run`
// relies on that to subscribe first and register second without a gap.
func (s *Server) eventStream(w http.ResponseWriter, r *http.Request) {
	want := r.URL.Query()["topic"]
	for _, t := range want {
		if !slices.Contains(topics, t) {
			writeError(w, r, s.log, fieldErrorf("topic", "%q is not a topic (want one of %v)", t, topics))
			return
		}
	}
	// Without index, only later events; with index=N, the kept ones after
	// N first (index=0: every kept one).
	var from uint64
	if v := r.URL.Query().Get("index"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == ^uint64(0) {
			writeError(w, r, s.log, fieldErrorf("index", "must be an event index (a whole number), got %q", v))
			return
		}
		from = n + 1
	}
	ctx := r.Context()
	ch, err := s.cfg.Backend.Events(ctx, from)
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("subscribe to events: %w", err))
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		s.log.Debug("event stream: flush failed", "error", err)
		return
	}
	heartbeat := time.NewTicker(s.cfg.Heartbeat)
	defer heartbeat.Stop()
	enc := json.NewEncoder(w)
	// Events that are already queued go out in one write: under load
	// that is one syscall for many, here and in the reader.
	unflushed := false
	for {
		var err error
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-ch:
			if !ok {
				return
			}
			// Notices about the stream itself reach every stream,
			// whatever topics it asked for.
			notice := ev != nil && ev.Topic == api.TopicAgent && (ev.Type == "SubscriberDropped" || ev.Type == "EventsLost")
			if ev != nil && (notice || len(want) == 0 || slices.Contains(want, ev.Topic)) {
				err = enc.Encode(ev)
				unflushed = true
			}
		case <-heartbeat.C:
			_, err = w.Write([]byte("{}\n"))
			unflushed = true
		}
		if err == nil && unflushed && len(ch) == 0 {
			err = rc.Flush()
			unflushed = false
		}
		if err != nil {
			s.log.Debug("event stream ended", "error", err)
			return
		}
	}
}
