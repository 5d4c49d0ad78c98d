package apiserver

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// One-time tokens carry a login into a browser, as Nomad's do (`nomad ui
// -authenticate`): the CLI, holding a token (or the unix socket), asks for
// a one-time secret of its role; the browser gets it in the UI's URL
// fragment, which no request, log or Referer carries, and exchanges it,
// once and within OneTimeTTL, for that role's token, which it keeps in
// session storage. A one-time secret is worth nothing after its exchange,
// after its minute, or after the token it stands for was rotated (the
// exchange answers the current secret of the role, or nothing).

// OneTimeTTL is how long a one-time token can be exchanged.
const OneTimeTTL = time.Minute

// maxOneTime bounds the one-time tokens waiting to be exchanged: each is
// made by a holder of a token, but nothing should grow without bound.
const maxOneTime = 64

type oneTime struct {
	typ     string
	expires time.Time
}

// oneTimes holds the one-time tokens not yet exchanged, by the SHA-256 of
// their secret.
type oneTimes struct {
	mu      sync.Mutex
	pending map[[sha256.Size]byte]oneTime
}

// create makes a one-time secret of role typ.
func (o *oneTimes) create(typ string, now time.Time) (string, time.Time, error) {
	secret, err := NewTokenSecret()
	if err != nil {
		return "", time.Time{}, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.purge(now)
	if len(o.pending) >= maxOneTime {
		return "", time.Time{}, fmt.Errorf("%d one-time tokens are waiting to be exchanged; try again in a minute", maxOneTime)
	}
	if o.pending == nil {
		o.pending = map[[sha256.Size]byte]oneTime{}
	}
	exp := now.Add(OneTimeTTL)
	o.pending[sha256.Sum256([]byte(secret))] = oneTime{typ: typ, expires: exp}
	return secret, exp, nil
}

// take returns the role of a one-time secret and forgets it: a second
// exchange, or one after its minute, finds nothing.
func (o *oneTimes) take(secret string, now time.Time) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.purge(now)
	k := sha256.Sum256([]byte(secret))
	ot, ok := o.pending[k]
	delete(o.pending, k)
	return ot.typ, ok
}

func (o *oneTimes) purge(now time.Time) {
	for k, ot := range o.pending {
		if !now.Before(ot.expires) {
			delete(o.pending, k)
		}
	}
}

// createOneTime serves POST /v1/acl/token/onetime (management only, the
// unix socket's included): a one-time management token. The store keeps a
// role per token all the same, so that the exchange never hands out more
// than was asked.
func (s *Server) createOneTime(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Tokens == nil {
		writeError(w, r, s.log, errNoTokens)
		return
	}
	secret, exp, err := s.cfg.Tokens.oneTime.create(api.TokenTypeManagement, time.Now())
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, s.log, http.StatusOK, &api.OneTimeToken{OneTimeSecretID: secret, ExpiresAt: exp})
}

// exchangeOneTime serves POST /v1/acl/token/onetime/exchange, which needs no
// token: the one-time secret is the credential. The guard still refuses
// foreign Hosts and Origins, so another site cannot make a browser
// exchange one.
func (s *Server) exchangeOneTime(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Tokens == nil {
		writeError(w, r, s.log, errNoTokens)
		return
	}
	var req api.OneTimeTokenExchangeRequest
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	typ, ok := s.cfg.Tokens.oneTime.take(req.OneTimeSecretID, time.Now())
	if !ok {
		writeJSON(w, s.log, http.StatusForbidden, api.ErrorResponse{Field: "OneTimeSecretID",
			Error: "the one-time token is unknown, was exchanged already, or is more than a minute old: run pluginhost ui -authenticate again"})
		return
	}
	set := s.cfg.Tokens.cur.Load()
	tok := set.read
	if typ == api.TokenTypeManagement {
		tok = set.management
	}
	s.log.Info("one-time token exchanged", "type", typ)
	writeJSON(w, s.log, http.StatusOK, &api.OneTimeTokenExchangeResponse{Token: tok.wire()})
}
