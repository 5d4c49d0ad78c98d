package apiserver

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// TestConnCapClosesLongestWaiting: at the cap, a new client is served and
// the connection that waited longest without a request (the first silent
// one) is closed to make room; the others are left alone and still answer.
func TestConnCapClosesLongestWaiting(t *testing.T) {
	ts := startServer(t, func(c *ServerConfig) {
		// Long timeouts: what frees the room must be the cap.
		c.Limits = Limits{MaxConns: 4, ReadHeaderTimeout: time.Minute, IdleTimeout: time.Minute}
	})
	ts.be.jobs["web"] = &api.Job{ID: "web", Type: "service", Status: api.JobStatusRunning}
	silent := make([]net.Conn, 4)
	for i := range silent {
		silent[i] = ts.dialRaw(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if _, err := ts.client.Job(ctx, "web"); err != nil {
		t.Fatalf("a new client at the cap: %v", err)
	}
	waitClosed(t, silent[0], "the longest waiting connection")
	// The client's connection is idle now, the newest waiting: the next
	// one in line is silent[1], and silent[3] answers.
	if code, err := rawGet(t, silent[3], bufio.NewReader(silent[3]), "/v1/agent/self"); err != nil || code != http.StatusOK {
		t.Fatalf("a connection under the cap: %d, %v", code, err)
	}
}

// TestConnCapSparesRequestsInProgress: streams in progress are never closed
// for room; with every slot streaming, a new connection is closed at once
// (not queued).
func TestConnCapSparesRequestsInProgress(t *testing.T) {
	ts := startServer(t, func(c *ServerConfig) { c.Limits = Limits{MaxConns: 2} })
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	var streams []*api.EventStream
	for range 2 {
		s, err := ts.client.Events(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		<-ts.be.subd
		streams = append(streams, s)
	}
	c, err := api.NewClient(ts.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Self(ctx); err == nil {
		t.Fatal("a third connection was served with both slots streaming")
	}
	ts.be.publish(&api.Event{Topic: api.TopicJob, Type: "JobRegistered", Key: "web"})
	for i, s := range streams {
		if ev, err := s.Next(ctx); err != nil || ev.Key != "web" {
			t.Fatalf("stream %d after the refusal: %v, %v", i, ev, err)
		}
	}
}

// TestMaxConnsFor: the default cap, or a quarter of a smaller descriptor
// limit.
func TestMaxConnsFor(t *testing.T) {
	for nofile, want := range map[uint64]int{
		1 << 20: DefaultMaxConns, 20000: DefaultMaxConns, 4096: DefaultMaxConns,
		1024: 256, 256: 64, 40: minMaxConns, 0: minMaxConns,
	} {
		if got := MaxConnsFor(nofile); got != want {
			t.Errorf("MaxConnsFor(%d) = %d, want %d", nofile, got, want)
		}
	}
}

// TestWaitList: the hand-made list keeps the order of arrival, and removes
// from anywhere, twice without harm.
func TestWaitList(t *testing.T) {
	var w waitList
	a, b, c := &limitedConn{}, &limitedConn{}, &limitedConn{}
	order := func() []*limitedConn {
		var out []*limitedConn
		for x := w.head; x != nil; x = x.next {
			out = append(out, x)
		}
		return out
	}
	same := func(got []*limitedConn, want ...*limitedConn) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%d elements, want %d", len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("element %d differs", i)
			}
		}
	}
	w.pushBack(a)
	w.pushBack(b)
	w.pushBack(c)
	w.pushBack(b) // already there: stays in place
	same(order(), a, b, c)
	w.remove(b)
	w.remove(b)
	w.pushBack(b)
	same(order(), a, c, b)
	w.remove(a)
	w.remove(b)
	same(order(), c)
	if w.tail != c {
		t.Fatal("tail is not the last element")
	}
	w.remove(c)
	same(order())
	if w.head != nil || w.tail != nil {
		t.Fatal("empty list has a head or a tail")
	}
}
