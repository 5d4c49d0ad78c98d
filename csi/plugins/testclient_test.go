package plugins

import (
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/csi"
)

// testClient returns a client for s with fast retries, closed at cleanup.
func testClient(t testing.TB, socket string, retry csi.RetryPolicy) *csi.Client {
	t.Helper()
	if retry.BaseDelay == 0 {
		retry.BaseDelay = time.Millisecond
		retry.MaxDelay = 20 * time.Millisecond
	}
	c, err := csi.NewClient(csi.ClientConfig{Endpoint: "unix://" + socket, Retry: retry})
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
