package api

import "time"

// ACLToken is one of the agent's tokens. Only /v1/acl/tokens answers with
// SecretID, and only to the management token or the unix socket.
type ACLToken struct {
	// Type is "management" or "read".
	Type     string
	SecretID string
	// Source is "generated" (kept in the data dir; rotatable) or "config"
	// (the agent config's acl block).
	Source string
}

// ACLTokens is the body of GET /v1/acl/tokens and of a rotation's answer.
type ACLTokens struct {
	Tokens []*ACLToken
}

// ACLTokenRotateRequest is the body of POST /v1/acl/tokens/rotate.
type ACLTokenRotateRequest struct {
	// Type is the token to replace: "management" or "read".
	Type string
}

// HeaderToken is Nomad's token header; "Authorization: Bearer <token>" is
// accepted too.
const HeaderToken = "X-Nomad-Token"

// EnvToken is the environment variable the CLI reads a token from (Nomad's
// NOMAD_TOKEN).
const EnvToken = "PLUGINHOST_TOKEN"

// Token types, as ACLToken.Type and ACLTokenRotateRequest.Type name them.
const (
	TokenTypeManagement = "management"
	TokenTypeRead       = "read"
)

// Token sources, as ACLToken.Source names them.
const (
	// TokenSourceGenerated: made by the agent at its first start and kept
	// in the data dir; pluginhost operator token -rotate replaces it.
	TokenSourceGenerated = "generated"
	// TokenSourceConfig: set in the agent's config (acl block); only the
	// config file changes it.
	TokenSourceConfig = "config"
)

// OneTimeToken is the answer of POST /v1/acl/token/onetime: a secret that
// a browser exchanges, once and before ExpiresAt, for the token of the
// caller's role (`pluginhost ui -authenticate`, as `nomad ui
// -authenticate`). It travels in the UI's URL fragment, never as a token.
type OneTimeToken struct {
	OneTimeSecretID string
	ExpiresAt       time.Time
}

// OneTimeTokenExchangeRequest is the body of POST
// /v1/acl/token/onetime/exchange.
type OneTimeTokenExchangeRequest struct {
	OneTimeSecretID string
}

// OneTimeTokenExchangeResponse is what the exchange answers: the token of
// the role that made the one-time token ("management" or "read").
type OneTimeTokenExchangeResponse struct {
	Token *ACLToken
}

// UIListener is the answer of POST /v1/agent/ui: where a browser reaches
// the agent's UI (an http:// URL on loopback). An agent on a unix socket
// opens a loopback port for it on the first call.
type UIListener struct {
	URL string
}
