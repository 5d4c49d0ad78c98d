package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// uiStub stands in for package host/webui: a page that says what it is.
var uiStub = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html")
	_, _ = w.Write([]byte("<!doctype html><title>pluginhost</title>"))
})

// A one-time token, made with the management token, is exchanged once,
// within its minute, for that token; the exchange needs no token, and a
// second one, a late one or another site's is refused. The read token may
// only GET, so it makes none.
func TestOneTimeTokens(t *testing.T) {
	ts := startTCPServer(t)
	mgmt, read := ts.tokens.Management(), ts.tokens.Read()
	post := func(path, tok, body string, extra http.Header) rawResp {
		h := http.Header{"Content-Type": {"application/json"}}
		if tok != "" {
			h.Set(api.HeaderToken, tok)
		}
		for k, v := range extra {
			h[k] = v
		}
		return ts.do(t, rawReq{method: http.MethodPost, path: path, body: body, header: h})
	}
	create := func(tok string) string {
		t.Helper()
		resp := post("/v1/acl/token/onetime", tok, "{}", nil)
		if resp.status != http.StatusOK {
			t.Fatalf("create: %d %s", resp.status, resp.body)
		}
		var ott api.OneTimeToken
		mustUnmarshal(t, resp.body, &ott)
		if ott.OneTimeSecretID == "" || time.Until(ott.ExpiresAt) > OneTimeTTL || time.Until(ott.ExpiresAt) <= 0 {
			t.Fatalf("one-time token %+v", ott)
		}
		return ott.OneTimeSecretID
	}
	exchange := func(secret string, extra http.Header) rawResp {
		return post("/v1/acl/token/onetime/exchange", "", `{"OneTimeSecretID":"`+secret+`"}`, extra)
	}
	if resp := post("/v1/acl/token/onetime", "", "{}", nil); resp.status != http.StatusUnauthorized {
		t.Fatalf("a one-time token without a token: %d", resp.status)
	}
	if resp := post("/v1/acl/token/onetime", read, "{}", nil); resp.status != http.StatusForbidden {
		t.Fatalf("a one-time token with the read token: %d", resp.status)
	}
	for tok, want := range map[string]string{mgmt: api.TokenTypeManagement} {
		secret := create(tok)
		// Another site's page cannot make a browser exchange it.
		if resp := exchange(secret, http.Header{"Origin": {"http://evil.example"}}); resp.status != http.StatusForbidden || resp.er.Field != "Origin" {
			t.Fatalf("exchange from a foreign Origin: %d %s", resp.status, resp.body)
		}
		resp := exchange(secret, nil)
		if resp.status != http.StatusOK {
			t.Fatalf("exchange: %d %s", resp.status, resp.body)
		}
		var got api.OneTimeTokenExchangeResponse
		mustUnmarshal(t, resp.body, &got)
		if got.Token == nil || got.Token.Type != want || got.Token.SecretID != tok {
			t.Fatalf("exchanged %+v, want the %s token", got.Token, want)
		}
		if resp := exchange(secret, nil); resp.status != http.StatusForbidden || resp.er.Field != "OneTimeSecretID" {
			t.Fatalf("second exchange: %d %s", resp.status, resp.body)
		}
	}
	// Late: a token made more than a minute ago is gone.
	secret, _, err := ts.tokens.oneTime.create(api.TokenTypeManagement, time.Now().Add(-OneTimeTTL-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if resp := exchange(secret, nil); resp.status != http.StatusForbidden {
		t.Fatalf("late exchange: %d %s", resp.status, resp.body)
	}
}

// The UI's own requests pass the guard: same Origin as the Host they name
// and Sec-Fetch-Site same-origin, with a token. Another loopback port is
// another origin, and same-site is not same-origin.
func TestSameOriginPasses(t *testing.T) {
	ts := startTCPServer(t)
	self := "http://" + ts.srv.Addr()
	for _, c := range []struct {
		origin, site string
		status       int
	}{
		{self, "same-origin", http.StatusOK},
		{self, "", http.StatusOK},
		{"http://127.0.0.1:1", "same-origin", http.StatusForbidden},
		{"https://" + ts.srv.Addr(), "same-origin", http.StatusForbidden},
		{self, "same-site", http.StatusForbidden},
		{self, "cross-site", http.StatusForbidden},
	} {
		h := http.Header{api.HeaderToken: {ts.tokens.Read()}, "Origin": {c.origin}}
		if c.site != "" {
			h.Set("Sec-Fetch-Site", c.site)
		}
		if resp := ts.do(t, rawReq{method: http.MethodGet, path: "/v1/jobs", header: h}); resp.status != c.status {
			t.Errorf("Origin %s, Sec-Fetch-Site %q: %d, want %d", c.origin, c.site, resp.status, c.status)
		}
	}
	// The UI's pages need no token; the API behind them does.
	if resp := ts.do(t, rawReq{method: http.MethodGet, path: "/v1/jobs", header: http.Header{"Origin": {self}}}); resp.status != http.StatusUnauthorized {
		t.Errorf("API without a token from the UI's origin: %d", resp.status)
	}
}

// On a unix socket, POST /v1/agent/ui opens a loopback listener once: its
// pages are served without a token, its API needs one, and it stops with
// the server.
func TestUIListener(t *testing.T) {
	tokens, err := OpenTokens(TokensConfig{})
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(c *ServerConfig) { c.Tokens, c.UI = tokens, uiStub })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := s.client.UIListener(ctx)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.client.UIListener(ctx)
	if err != nil || again.URL != l.URL || !strings.HasPrefix(l.URL, "http://127.0.0.1:") || !strings.HasSuffix(l.URL, "/ui/") {
		t.Fatalf("UI listener %q then %q (%v)", l.URL, again.URL, err)
	}
	get := func(url, tok string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if tok != "" {
			req.Header.Set(api.HeaderToken, tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	base := strings.TrimSuffix(l.URL, "/ui/")
	if st := get(l.URL, ""); st != http.StatusOK {
		t.Errorf("the UI's page: %d", st)
	}
	if st := get(base+"/v1/jobs", ""); st != http.StatusUnauthorized {
		t.Errorf("the API on the UI's listener without a token: %d", st)
	}
	if st := get(base+"/v1/jobs", tokens.Read()); st != http.StatusOK {
		t.Errorf("the API on the UI's listener with the read token: %d", st)
	}
	// A one-time token made on the unix socket is a management one.
	ott, err := s.client.CreateOneTimeToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := api.NewClient(strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := c.ExchangeOneTimeToken(ctx, ott.OneTimeSecretID)
	if err != nil || tok.Type != api.TokenTypeManagement || tok.SecretID != tokens.Management() {
		t.Fatalf("exchange on the UI listener: %+v %v", tok, err)
	}
	if err := s.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// Shutdown waits for the UI's listener: it is closed when it returns.
	if resp, err := http.Get(l.URL); err == nil {
		resp.Body.Close()
		t.Fatal("the UI's listener outlived its server")
	}
	if _, err := s.client.UIListener(ctx); err == nil {
		t.Error("a UI listener opened after Shutdown")
	}
}

func mustUnmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}
