package jobspec_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/apiserver"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
)

// countingBackend records RunJob calls; no other method is reached by
// these tests (the embedded nil interface would panic if one were).
type countingBackend struct {
	apiserver.Backend
	mu  sync.Mutex
	ran []string
}

func (b *countingBackend) calls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.ran)
}

func (b *countingBackend) RunJob(_ context.Context, job *jobspec.Job) (*api.JobRegisterResponse, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ran = append(b.ran, job.ID)
	return &api.JobRegisterResponse{JobID: job.ID}, nil
}

// startAPI serves a real apiserver.Server on a unix socket and returns an HTTP
// client dialling it.
func startAPI(t *testing.T, be apiserver.Backend) *http.Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "phjs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "api.sock")
	srv, err := apiserver.NewServer(apiserver.ServerConfig{Addr: "unix://" + sock, Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return")
		}
	})
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
	t.Cleanup(hc.CloseIdleConnections)
	return hc
}

// TestBadCorpusSameThroughJSON: every bad job file whose HCL is well formed
// is refused as a JSON job too, with the same problems, each naming its
// field. Files that fail on HCL shape alone (syntax, unknown keys, types)
// have no JSON equivalent and are skipped.
func TestBadCorpusSameThroughJSON(t *testing.T) {
	be := &countingBackend{}
	hc := startAPI(t, be)
	files, err := filepath.Glob(filepath.Join("testdata", "bad", "*.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	// A zero that a job file can write but that a JSON job's
	// Canonicalize reads as "unset" (see the package doc) is the one
	// intended difference: such a JSON job gets the default and runs.
	zeroIsDefault := map[string]bool{"csi-zero-health-timeout.hcl": true}
	compared := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		job, err := jobspec.DecodeUnvalidated(src, f)
		if err != nil {
			continue
		}
		compared++
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, perr := jobspec.Parse(src, f)
			var de *hclstrict.DiagnosticsError
			if !errors.As(perr, &de) {
				t.Fatalf("Parse = %v, want diagnostics", perr)
			}
			var want []string
			for _, d := range de.Diags {
				want = append(want, d.Summary+": "+d.Detail)
			}

			body, err := json.Marshal(map[string]any{"Job": job})
			if err != nil {
				t.Fatal(err)
			}
			ranBefore := be.calls()
			status, er := post(t, hc, body)
			if zeroIsDefault[filepath.Base(f)] {
				if status != http.StatusOK {
					t.Errorf("status %d (%+v): a zero the JSON job leaves unset should get its default", status, er)
				}
				return
			}
			if be.calls() != ranBefore {
				t.Errorf("a refused job reached the backend")
			}
			if status != http.StatusBadRequest {
				t.Fatalf("status %d (%+v), want 400", status, er)
			}
			var got []string
			for _, d := range er.Diagnostics {
				got = append(got, d.Summary+": "+d.Detail)
				if d.Field == "" {
					t.Errorf("diagnostic %q names no field", d.Summary)
				}
			}
			sort.Strings(want)
			sort.Strings(got)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("JSON problems\n  %q\nfile problems\n  %q", got, want)
			}
			if len(er.Diagnostics) > 0 && er.Field != er.Diagnostics[0].Field {
				t.Errorf("error field %q is not the first diagnostic's %q", er.Field, er.Diagnostics[0].Field)
			}
		})
	}
	if compared < 25 {
		t.Errorf("only %d of %d bad files compared; the JSON path is barely covered", compared, len(files))
	}
}

func post(t *testing.T, hc *http.Client, body []byte) (int, api.ErrorResponse) {
	t.Helper()
	resp, err := hc.Post("http://x/v1/jobs", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var er api.ErrorResponse
	if resp.StatusCode >= 300 {
		if err := json.Unmarshal(raw, &er); err != nil {
			t.Fatalf("error body is not JSON: %q", raw)
		}
	}
	return resp.StatusCode, er
}
