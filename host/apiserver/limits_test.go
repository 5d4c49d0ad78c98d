package apiserver

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// bound is how long a test waits for something the server does at once.
const bound = 5 * time.Second

// dialRaw opens a connection to ts's socket that the test drives by hand.
func (ts *testServer) dialRaw(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("unix", ts.sock, bound)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// rawGet sends a GET on c and reads the answer's status.
func rawGet(t *testing.T, c net.Conn, br *bufio.Reader, path string) (int, error) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(bound))
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// waitClosed waits until the server closes c: a read that ends with EOF or
// a reset, not with the test's deadline.
func waitClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(bound))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: still open after %s", what, bound)
	}
}

// TestRefusedClientLosesConnection: a client without a token is answered
// and its connection closed, so it cannot keep one idle (the review's
// flood: one 401 per connection, then nothing).
func TestRefusedClientLosesConnection(t *testing.T) {
	ts := startTCPServer(t)
	c, err := net.DialTimeout("tcp", ts.srv.Addr(), bound)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	code, err := rawGet(t, c, bufio.NewReader(c), "/v1/agent/health")
	if err != nil || code != http.StatusUnauthorized {
		t.Fatalf("no token: %d, %v", code, err)
	}
	waitClosed(t, c, "a refused client's connection")
}

// TestIdleAndHeaderTimeouts: a keep-alive connection without a next
// request, and one that sends half a header, are closed by the server.
func TestIdleAndHeaderTimeouts(t *testing.T) {
	ts := startServer(t, func(c *ServerConfig) {
		c.Limits = Limits{IdleTimeout: 100 * time.Millisecond, ReadHeaderTimeout: 100 * time.Millisecond}
	})
	idle := ts.dialRaw(t)
	if code, err := rawGet(t, idle, bufio.NewReader(idle), "/v1/agent/self"); err != nil || code != http.StatusOK {
		t.Fatalf("first request: %d, %v", code, err)
	}
	half := ts.dialRaw(t)
	if _, err := io.WriteString(half, "GET /v1/agent/health HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, idle, "an idle keep-alive connection")
	waitClosed(t, half, "a half header")
}

// TestWriteTimeoutPerWrite: the write timeout bounds each write, not the
// answer: a stream read all along outlives it (and the read timeout) many
// times over, and one whose reader stops is ended once its writes block
// that long.
func TestWriteTimeoutPerWrite(t *testing.T) {
	const wt = 200 * time.Millisecond
	ts := startServer(t, func(c *ServerConfig) {
		c.Limits = Limits{WriteTimeout: wt, ReadTimeout: wt, ReadHeaderTimeout: wt}
		c.Heartbeat = 20 * time.Millisecond
	})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	// The read stream outlives ctx: the only subscription that may end
	// within the bound is the stuck one.
	sctx, scancel := context.WithCancel(context.Background())
	defer scancel()
	stream, err := ts.client.Events(sctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	<-ts.be.subd
	// Next skips heartbeats: an event published after 5 write timeouts
	// arrives on the same stream.
	late := time.AfterFunc(5*wt, func() { ts.be.publish(&api.Event{Topic: api.TopicJob, Type: "JobRegistered", Key: "late"}) })
	defer late.Stop()
	if ev, err := stream.Next(ctx); err != nil || ev.Key != "late" {
		t.Fatalf("a stream being read, after 5 write timeouts: %v, %v", ev, err)
	}

	stuck := ts.dialRaw(t)
	if _, err := io.WriteString(stuck, "GET /v1/event/stream HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-ts.be.subd
	// More than the socket buffers hold, and never read.
	big := &api.Event{Topic: api.TopicJob, Type: "JobRegistered", Key: "big",
		Payload: api.EventPayload{Message: strings.Repeat("x", 64<<10)}}
	for range 40 {
		ts.be.publish(big)
	}
	// The first stream reads on, so only the stuck one can end.
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			if _, err := stream.Next(sctx); err != nil {
				return
			}
		}
	}()
	defer func() {
		stream.Close()
		<-readerDone
	}()
	select {
	case <-ts.be.unsub:
	case <-time.After(bound):
		t.Fatalf("a stream nobody reads was not ended within %s", bound)
	}
}
