package webui

import (
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, path string, gz bool) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	w := httptest.NewRecorder()
	Handler().ServeHTTP(w, req)
	return w.Result()
}

// Every page path is the page, every asset is itself with its type, and
// every answer carries the policy: scripts of this origin only, no frame.
func TestHandler(t *testing.T) {
	for _, c := range []struct {
		path, ctype, body string
		status            int
	}{
		{"/ui/", "text/html", "<main id=\"main\"", 200},
		{"/ui/jobs/web", "text/html", "<main id=\"main\"", 200},
		{"/ui/allocations/abc/t/logs", "text/html", "<main id=\"main\"", 200},
		{"/ui/assets/app.js", "text/javascript", "import", 200},
		{"/ui/assets/style.css", "text/css", ":root", 200},
		{"/ui/assets/nope.js", "", "", 404},
		{"/ui/assets/index.html", "", "", 404},
	} {
		resp := get(t, c.path, false)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != c.status {
			t.Errorf("%s: %d, want %d", c.path, resp.StatusCode, c.status)
			continue
		}
		if csp := resp.Header.Get("Content-Security-Policy"); csp != ContentSecurityPolicy {
			t.Errorf("%s: CSP %q", c.path, csp)
		}
		if c.status != 200 {
			continue
		}
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), c.ctype) || !strings.Contains(string(body), c.body) {
			t.Errorf("%s: %s %q...", c.path, resp.Header.Get("Content-Type"), body[:min(len(body), 60)])
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", c.path, resp.Header)
		}
	}
	resp := get(t, "/ui/assets/app.js", true)
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatal("no gzip for a browser that takes it")
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(zr); !strings.Contains(string(b), "import") {
		t.Fatal("the gzipped asset is not the asset")
	}
}

// The UI never turns text into markup and never runs text as code: no
// innerHTML and its kin, no eval, no inline script or handler in the
// page. Every string a job, task or plugin sends stays a text node.
func TestNoMarkupFromText(t *testing.T) {
	banned := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setAttribute\(['"]on`)
	_ = fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := assets.ReadFile(p)
		src := string(b)
		switch {
		case strings.HasSuffix(p, ".js"):
			if m := banned.FindString(src); m != "" {
				t.Errorf("%s uses %s", p, m)
			}
		case strings.HasSuffix(p, ".html"):
			if regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`).MatchString(src) || regexp.MustCompile(`\son[a-z]+=`).MatchString(src) {
				t.Errorf("%s has an inline script or handler", p)
			}
		}
		return nil
	})
}

// TestAssetBudget keeps the UI small: issue 27 asks for under 300 KB
// gzipped.
func TestAssetBudget(t *testing.T) {
	raw, gz := Size()
	t.Logf("UI assets: %d bytes, %d gzipped", raw, gz)
	if gz > 300*1024 {
		t.Fatalf("UI assets are %d bytes gzipped, over the 300 KB budget", gz)
	}
}

func BenchmarkAssets(b *testing.B) {
	raw, gz := Size()
	b.ReportMetric(float64(raw), "raw-bytes")
	b.ReportMetric(float64(gz), "gzip-bytes")
	h := Handler()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, "/ui/assets/app.js", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}
