package api

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// bound is how long a test waits for something the server does at once.
const bound = 5 * time.Second

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
