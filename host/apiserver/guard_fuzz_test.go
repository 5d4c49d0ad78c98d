package apiserver

import (
	"encoding/json"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/api"
)

// FuzzGuardHeaders throws request headers at the guard of a TCP server and
// checks its verdict against the rules stated independently here: a request
// gets through only with a loopback Host, no Origin, no cross-site
// Sec-Fetch-Site, a valid token (the read token only for GET and HEAD) and,
// for a mutating request with a body, an application/json body; every
// refusal is a JSON error with a reason and no CORS header, and never
// carries a token.
func FuzzGuardHeaders(f *testing.F) {
	// use: 0 sends xToken as it is, 1 the management token, 2 the read
	// token (the fuzzer cannot guess a random secret), 3 the management
	// token as Authorization: Bearer.
	f.Add("POST", "evil.example:4646", "http://evil.example", "", "text/plain", "", "", uint8(0), true)
	f.Add("POST", "127.0.0.1:4646", "", "", "application/json", "", "", uint8(1), true)
	f.Add("POST", "localhost", "", "", "application/json; charset=utf-8", "", "", uint8(2), true)
	f.Add("GET", "[::1]:4646", "", "none", "", "", "", uint8(2), false)
	f.Add("GET", "127.0.0.1:4646", "null", "", "", "", "", uint8(1), false)
	f.Add("DELETE", "127.0.0.1", "", "cross-site", "", "", "", uint8(1), false)
	f.Add("PUT", "127.0.0.1:1", "", "", "", "", "Basic Zm9vOmJhcg==", uint8(0), true)
	f.Add("HEAD", "LOCALHOST:9", "", "same-origin", "", " padded-token-value ", "", uint8(0), false)
	f.Add("GET", "127.0.0.1.nip.io:4646", "", "", "", "", "Bearer", uint8(3), false)
	f.Add("PATCH", "[::1%lo]:4646", "", "", "application/jsonx", "", "", uint8(1), true)
	f.Add("GET", "::1:4646", "", "", "", "", "", uint8(2), false)
	f.Add("GET", "::1:", "", "", "", "", "", uint8(2), false)
	f.Add("GET", "::ffff:127.0.0.1", "", "", "", "", "", uint8(2), false)
	f.Add("GET", "", "", "", "", "", "", uint8(1), false)

	tokens, err := OpenTokens(TokensConfig{})
	if err != nil {
		f.Fatal(err)
	}
	s := &Server{cfg: ServerConfig{Tokens: tokens}, log: hclog.NewNullLogger(),
		addr: api.Addr{Network: "tcp", Address: "127.0.0.1:4646"}}
	mgmt, read := tokens.Management(), tokens.Read()

	f.Fuzz(func(t *testing.T, method, host, origin, secFetch, ctype, xToken, authz string, use uint8, body bool) {
		var bodyText string
		if body {
			bodyText = `{"Source": "job \"x\" {}"}`
		}
		req, err := http.NewRequest(method, "http://127.0.0.1:4646/v1/jobs", strings.NewReader(bodyText))
		if err != nil {
			return // not a method net/http would parse
		}
		req.Host = host
		set := func(k, v string) {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		set("Origin", origin)
		set("Sec-Fetch-Site", secFetch)
		set("Content-Type", ctype)
		switch use % 4 {
		case 1:
			xToken = mgmt
		case 2:
			xToken = read
		case 3:
			xToken, authz = "", "Bearer "+mgmt
		}
		set(api.HeaderToken, xToken)
		set("Authorization", authz)

		var got role
		passed := false
		next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			passed = true
			got, _ = r.Context().Value(roleKey).(role)
		})
		rec := httptest.NewRecorder()
		s.guard(next).ServeHTTP(rec, req)

		// The rules, stated without the guard's code.
		want := roleNone
		secret := strings.TrimSpace(xToken)
		if secret == "" {
			if sch, rest, ok := strings.Cut(strings.TrimSpace(authz), " "); ok && strings.EqualFold(sch, "bearer") {
				secret = strings.TrimSpace(rest)
			}
		}
		switch secret {
		case mgmt:
			want = roleManagement
		case read:
			want = roleRead
		}
		others := origin == "" && (secFetch == "" || secFetch == "none") && want != roleNone
		if want == roleRead && method != http.MethodGet && method != http.MethodHead {
			others = false
		}
		if body && method != http.MethodGet && method != http.MethodHead {
			mt, _, err := mime.ParseMediaType(ctype)
			if err != nil || mt != "application/json" {
				others = false
			}
		}
		// A Host in a well-formed loopback form must pass; one that is
		// loopback in no reading at all must not. Malformed ones in
		// between ("::1:") may go either way.
		strict, lenient := loopbackHost(host)
		if passed && !(others && lenient) || !passed && others && strict {
			t.Fatalf("%s Host=%q Origin=%q Sec-Fetch-Site=%q Content-Type=%q token=%q Authorization=%q body=%v: passed=%v (answer %d %s)",
				method, host, origin, secFetch, ctype, xToken, authz, body, passed, rec.Code, rec.Body)
		}
		if passed {
			if got != want {
				t.Fatalf("role %v, want %v", got, want)
			}
			return
		}
		switch rec.Code {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusUnsupportedMediaType:
		default:
			t.Fatalf("refused with %d", rec.Code)
		}
		var er api.ErrorResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &er); err != nil || er.Error == "" || er.Field == "" {
			t.Fatalf("refusal body %q is not a JSON error with a reason", rec.Body)
		}
		for k := range rec.Header() {
			if strings.HasPrefix(strings.ToLower(k), "access-control-") {
				t.Fatalf("CORS header %s", k)
			}
		}
		if strings.Contains(rec.Body.String(), mgmt) || strings.Contains(rec.Body.String(), read) {
			t.Fatalf("a token in a refusal: %s", rec.Body)
		}
	})
}

// loopbackHost is the Host rule: localhost or a loopback IP without a
// zone, with or without a port. strict: h is such a name in a well-formed
// form (name, [v6], name:port, [v6]:port); lenient: some reading of h (the
// whole, or what precedes its last colon) is such a name.
func loopbackHost(h string) (strict, lenient bool) {
	name := func(s string) bool {
		if strings.EqualFold(s, "localhost") {
			return true
		}
		ip, err := netip.ParseAddr(s)
		return err == nil && ip.Zone() == "" && ip.IsLoopback()
	}
	bracketed := func(s string) (string, bool) {
		if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
			return s[1 : len(s)-1], true
		}
		return s, false
	}
	host, port, hasPort := h, "", false
	if i := strings.LastIndex(h, ":"); i >= 0 {
		host, port, hasPort = h[:i], h[i+1:], true
	}
	inner, br := bracketed(host)
	strict = hasPort && !strings.Contains(port, "]") && (br && strings.Contains(inner, ":") && name(inner) ||
		!br && !strings.Contains(host, ":") && name(host))
	if v6, ok := bracketed(h); ok && strings.Contains(v6, ":") && name(v6) {
		strict = true
	}
	if !strings.Contains(h, ":") && name(h) {
		strict = true
	}
	lenient = strict || name(strings.Trim(h, "[]")) || hasPort && name(strings.Trim(host, "[]"))
	return strict, lenient
}
