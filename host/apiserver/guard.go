package apiserver

import (
	"context"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/pluginhost/pluginhost/api"
)

// The guard decides who gets past the listener, before any route runs.
//
// On TCP every request needs a token (X-Nomad-Token or Authorization:
// Bearer); the read token may only GET. On the unix socket the file mode
// (0600 in a 0700 directory) already said who may connect, and no token is
// asked. Everywhere, what another web page can send is refused whatever
// token it carries: a Host that is not a loopback name (DNS rebinding), an
// Origin that is not this listener's own or a Sec-Fetch-Site other than
// "none" or "same-origin" (another site's fetch), and a body on a mutating
// request that is not application/json (a "simple" cross-site POST needs no
// preflight only with text/plain or a form type). No answer carries CORS
// headers, so no browser lets another page read one.
//
// The agent's own UI is the one page let through: served from this
// listener, its requests carry Origin http://<the Host they name> and
// Sec-Fetch-Site same-origin, and its token in X-Nomad-Token. Its pages and
// the one-time token's exchange are the public routes, which need no token
// (routeTable); everything they show comes from routes that do. The unix
// socket takes no Origin at all: no browser reaches it.

// ctxKey keys the request context's values of this package.
type ctxKey int

const roleKey ctxKey = iota

// role is what a request may do.
type role int

const (
	roleNone role = iota
	roleRead
	roleManagement
)

// refusal is why the guard turned a request away.
type refusal struct {
	status int
	field  string
	msg    string
}

// guard wraps next with the checks above.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ref, tok, public := s.check(r)
		if ref != nil {
			s.refuse(w, r, ref)
			return
		}
		ctx := r.Context()
		rl := roleManagement
		if public && tok == nil && s.addr.Network == "tcp" {
			rl = roleNone
		}
		if tok != nil {
			if tok.typ == api.TokenTypeRead {
				rl = roleRead
			}
			// A rotation ends the requests made with the token it
			// replaced: an event stream or a followed log opened with
			// the old token stops with it.
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			stop := context.AfterFunc(tok.revoked, cancel)
			defer func() {
				stop()
				cancel()
			}()
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, roleKey, rl)))
	})
}

// check returns why r is refused, or the token it authenticated with (nil
// on the unix socket, where none is needed, and on a public route without
// one), and whether r's route is public.
func (s *Server) check(r *http.Request) (ref *refusal, tok *token, public bool) {
	tcp := s.addr.Network == "tcp"
	if tcp && !hostAllowed(r.Host) {
		return &refusal{http.StatusForbidden, "Host",
			"the Host header must name this agent by a loopback address or localhost; other names are refused (DNS rebinding)"}, nil, false
	}
	if origin, ok := r.Header["Origin"]; ok && !(tcp && sameOrigin(origin, r.Host)) {
		return &refusal{http.StatusForbidden, "Origin",
			"requests from web pages other than the agent's own UI (with an Origin header) are refused; the CLI and the Go client send none"}, nil, false
	}
	if v := r.Header.Get("Sec-Fetch-Site"); v != "" && v != "none" && !(tcp && v == "same-origin") {
		return &refusal{http.StatusForbidden, "Sec-Fetch-Site",
			"requests another web page made (Sec-Fetch-Site: " + clip(v) + ") are refused"}, nil, false
	}
	if s.public != nil {
		_, pattern := s.public.Handler(r)
		public = pattern != ""
	}
	if tcp {
		secret, ref := tokenOf(r)
		if ref != nil {
			if public {
				ref = nil // no token, and none needed
			} else {
				return ref, nil, public
			}
		}
		if secret != "" {
			tok = s.cfg.Tokens.authenticate(secret)
			if tok == nil {
				return &refusal{http.StatusForbidden, api.HeaderToken, "the token is not valid (it may have been rotated)"}, nil, public
			}
			if tok.typ == api.TokenTypeRead && !readOnlyMethod(r.Method) {
				return &refusal{http.StatusForbidden, api.HeaderToken,
					"the read token may only GET; " + r.Method + " needs the management token"}, nil, public
			}
		}
	}
	if !readOnlyMethod(r.Method) && hasBody(r) {
		ct := r.Header.Get("Content-Type")
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return &refusal{http.StatusUnsupportedMediaType, "Content-Type",
				"a request body must be application/json, got Content-Type " + quoteOrNone(ct)}, nil, public
		}
	}
	return nil, tok, public
}

// sameOrigin reports whether a request's Origin header is this listener's
// own, as the UI it serves sends it: http://<host> with exactly the Host
// the request names (which hostAllowed checked to be loopback). A page of
// another loopback port is another origin.
func sameOrigin(origin []string, host string) bool {
	return len(origin) == 1 && origin[0] == "http://"+host
}

// tokenOf returns the request's token: X-Nomad-Token, else Authorization:
// Bearer. The URL is never read: a token there ends up in logs and
// histories.
func tokenOf(r *http.Request) (string, *refusal) {
	if v := strings.TrimSpace(r.Header.Get(api.HeaderToken)); v != "" {
		return v, nil
	}
	if v := r.Header.Get("Authorization"); v != "" {
		scheme, secret, _ := strings.Cut(strings.TrimSpace(v), " ")
		secret = strings.TrimSpace(secret)
		if !strings.EqualFold(scheme, "Bearer") || secret == "" {
			return "", &refusal{http.StatusUnauthorized, "Authorization",
				`the Authorization header must be "Bearer <token>"`}
		}
		return secret, nil
	}
	return "", &refusal{http.StatusUnauthorized, api.HeaderToken,
		"this endpoint needs a token in the " + api.HeaderToken + " header or as Authorization: Bearer (the CLI's -token or " + api.EnvToken + ")"}
}

// hostAllowed: a loopback IP or localhost, with any port or none. The
// listener is loopback-only, so these are the names it is reached by; a
// name a DNS server controls is what a rebinding attack needs.
func hostAllowed(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		h = host[1 : len(host)-1]
	}
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Zone() == "" && ip.IsLoopback()
}

// readOnlyMethod is what the read token may send.
func readOnlyMethod(m string) bool { return m == http.MethodGet || m == http.MethodHead }

// hasBody: a declared length above zero, or an unknown one (chunked).
func hasBody(r *http.Request) bool {
	return r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody
}

// refuse answers a refusal as JSON and logs it, never with the token.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, ref *refusal) {
	if ref.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="pluginhost"`)
	}
	lvl := s.log.Warn
	if ref.status == http.StatusUnauthorized || ref.status == http.StatusUnsupportedMediaType {
		lvl = s.log.Debug
	}
	lvl("request refused", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr,
		"status", ref.status, "field", ref.field)
	// A client that was refused has no use for its connection, and one
	// without a token must not keep it idle between attempts: each one
	// is a descriptor of the agent's (a review's 19,900 idle ones, each
	// after one 401, took them all). Closing also spares reading a body
	// nobody will look at.
	w.Header().Set("Connection", "close")
	writeJSON(w, s.log, ref.status, api.ErrorResponse{Error: ref.msg, Field: ref.field})
}

// roleOf is what the guard let r do.
func roleOf(r *http.Request) role {
	rl, _ := r.Context().Value(roleKey).(role)
	return rl
}

// requireManagement lets only management callers through: the unix
// socket's and the management token's.
func (s *Server) requireManagement(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if roleOf(r) != roleManagement {
			s.refuse(w, r, &refusal{http.StatusForbidden, api.HeaderToken, r.URL.Path + " needs the management token"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func quoteOrNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return `"` + clip(s) + `"`
}

// clip bounds a header value echoed in an answer.
func clip(s string) string {
	const max = 64
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}
