package api

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
