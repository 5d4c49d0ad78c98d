package apiserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/pluginhost/pluginhost/api"
)

// The API's tokens, as Nomad has them: a management token that may do
// everything and a read token that may only GET. They guard the TCP
// listener; on the unix socket the file mode is the authentication.

// TokenFileName is the file under the data dir that keeps the generated
// tokens, mode 0600.
const TokenFileName = "acl-tokens.json"

// minTokenLen and maxTokenLen bound a token set in the config: long enough
// not to be guessed, short enough to sit in a header.
const (
	minTokenLen = 16
	maxTokenLen = 512
)

// ErrTokenFromConfig: a token set in the agent's config cannot be rotated
// through the API.
var ErrTokenFromConfig = errors.New("the token is set in the agent's config file; change it there and restart the agent")

// CheckToken reports whether s can be a token: 16 to 512 printable ASCII
// characters without spaces, so that it survives a header and a file.
func CheckToken(s string) error {
	if len(s) < minTokenLen || len(s) > maxTokenLen {
		return fmt.Errorf("a token must be %d to %d characters long, got %d", minTokenLen, maxTokenLen, len(s))
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return fmt.Errorf("a token may hold only printable ASCII without spaces (character %d is not)", i+1)
		}
	}
	return nil
}

// NewTokenSecret returns 32 bytes from crypto/rand in hex, as strong as a
// Nomad secret ID.
func NewTokenSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// TokensConfig configures OpenTokens.
type TokensConfig struct {
	// Path keeps the generated tokens (0600, replaced atomically); "" keeps
	// them in memory only, for tests and embedders.
	Path string
	// Management and Read, when set, come from the agent's config: they
	// win over generated tokens and cannot be rotated.
	Management, Read string
}

// Tokens holds the agent's current tokens. Requests read them through an
// atomic pointer; Rotate swaps in a new set and ends every request still
// running under a token it replaced, so an old token stops working at once.
// It is safe for concurrent use.
type Tokens struct {
	path string
	cur  atomic.Pointer[tokenSet]

	// mu serialises the writers: Rotate, Publish and Unpublish.
	mu sync.Mutex
	// generated are the tokens kept in path, also when the config
	// overrides them.
	generated tokenFile
	// published is the per-user file holding the management token, "" if
	// none.
	published string

	// oneTime are the one-time tokens waiting for a browser (onetime.go).
	oneTime oneTimes
}

// tokenFile is the JSON kept at TokensConfig.Path.
type tokenFile struct {
	Management string
	Read       string
}

type tokenSet struct {
	management, read *token
}

// token is one secret as requests see it.
type token struct {
	typ    string
	secret string
	sum    [sha256.Size]byte
	source string
	// revoked ends when the token is rotated away; requests made with it
	// end with it.
	revoked context.Context
	revoke  context.CancelFunc
}

func newToken(typ, secret, source string) *token {
	ctx, cancel := context.WithCancel(context.Background())
	return &token{typ: typ, secret: secret, sum: sha256.Sum256([]byte(secret)), source: source, revoked: ctx, revoke: cancel}
}

// OpenTokens loads the generated tokens from cfg.Path, generates those
// missing (and writes them back), and lays the config's tokens over them.
func OpenTokens(cfg TokensConfig) (*Tokens, error) {
	for _, c := range []struct{ name, v string }{{"management token", cfg.Management}, {"read token", cfg.Read}} {
		if c.v == "" {
			continue
		}
		if err := CheckToken(c.v); err != nil {
			return nil, fmt.Errorf("tokens: %s: %w", c.name, err)
		}
	}
	if cfg.Management != "" && cfg.Management == cfg.Read {
		return nil, errors.New("tokens: the management and read tokens must differ")
	}
	t := &Tokens{path: cfg.Path}
	if cfg.Path != "" {
		f, err := readTokenFile(cfg.Path)
		if err != nil {
			return nil, err
		}
		t.generated = f
	}
	dirty := false
	for _, p := range []*string{&t.generated.Management, &t.generated.Read} {
		if *p != "" {
			continue
		}
		s, err := NewTokenSecret()
		if err != nil {
			return nil, fmt.Errorf("tokens: %w", err)
		}
		*p, dirty = s, true
	}
	if dirty && cfg.Path != "" {
		if err := writeFileAtomic(cfg.Path, t.generated); err != nil {
			return nil, fmt.Errorf("tokens: %w", err)
		}
	}
	set := &tokenSet{
		management: newToken(api.TokenTypeManagement, t.generated.Management, api.TokenSourceGenerated),
		read:       newToken(api.TokenTypeRead, t.generated.Read, api.TokenSourceGenerated),
	}
	if cfg.Management != "" {
		set.management = newToken(api.TokenTypeManagement, cfg.Management, api.TokenSourceConfig)
	}
	if cfg.Read != "" {
		set.read = newToken(api.TokenTypeRead, cfg.Read, api.TokenSourceConfig)
	}
	if set.management.secret == set.read.secret {
		// Only a config token equal to a generated one gets here.
		return nil, errors.New("tokens: the management and read tokens must differ")
	}
	t.cur.Store(set)
	return t, nil
}

// readTokenFile reads the generated tokens; a missing file is no tokens
// yet. A file others may read is tightened to 0600 first: it was ours to
// keep private.
func readTokenFile(path string) (tokenFile, error) {
	var f tokenFile
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("tokens: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return f, fmt.Errorf("tokens: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		if err := fh.Chmod(0o600); err != nil {
			return f, fmt.Errorf("tokens: %s is mode %v and cannot be made 0600: %w", path, st.Mode().Perm(), err)
		}
	}
	raw, err := io.ReadAll(io.LimitReader(fh, 64<<10))
	if err != nil {
		return f, fmt.Errorf("tokens: read %s: %w", path, err)
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return f, fmt.Errorf("tokens: %s is not a token file: %w", path, err)
	}
	for _, s := range []string{f.Management, f.Read} {
		if s == "" {
			continue
		}
		if err := CheckToken(s); err != nil {
			return f, fmt.Errorf("tokens: %s: %w", path, err)
		}
	}
	return f, nil
}

// writeFileAtomic writes v as JSON to path, 0600: a temporary file in the
// same directory, fsynced, renamed over path, and the directory fsynced, so
// that a crash leaves the old file or the new one, never half of one.
func writeFileAtomic(path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return writeSecretFile(path, append(raw, '\n'))
}

// writeSecretFile replaces path with data, 0600, atomically and durably.
func writeSecretFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	// CreateTemp makes the file 0600 already; say so for whoever reads
	// this, and in case that ever changes.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("write %s: sync directory: %w", path, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("write %s: sync directory: %w", path, err)
	}
	return nil
}

// authenticate returns the token secret matches, or nil. Both tokens are
// compared, in constant time, whatever the first comparison said: the
// answer's timing tells nothing about either token.
func (t *Tokens) authenticate(secret string) *token {
	set := t.cur.Load()
	sum := sha256.Sum256([]byte(secret))
	m := subtle.ConstantTimeCompare(sum[:], set.management.sum[:])
	r := subtle.ConstantTimeCompare(sum[:], set.read.sum[:])
	switch {
	case m == 1:
		return set.management
	case r == 1:
		return set.read
	}
	return nil
}

// List returns both tokens, secrets included; only management callers see
// it.
func (t *Tokens) List() *api.ACLTokens {
	set := t.cur.Load()
	return &api.ACLTokens{Tokens: []*api.ACLToken{set.management.wire(), set.read.wire()}}
}

func (tk *token) wire() *api.ACLToken {
	return &api.ACLToken{Type: tk.typ, SecretID: tk.secret, Source: tk.source}
}

// Management returns the current management token's secret.
func (t *Tokens) Management() string { return t.cur.Load().management.secret }

// Read returns the current read token's secret.
func (t *Tokens) Read() string { return t.cur.Load().read.secret }

// Rotate replaces the generated token of type typ with a new one, persists
// it, rewrites the published per-user file for the management token, and
// then ends every request still running under the old one. A token set in
// the config is refused with ErrTokenFromConfig.
func (t *Tokens) Rotate(typ string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.cur.Load()
	next := *old
	var gone *token
	switch typ {
	case api.TokenTypeManagement:
		gone = old.management
	case api.TokenTypeRead:
		gone = old.read
	default:
		return fieldErrorf("Type", "must be %q or %q, got %q", api.TokenTypeManagement, api.TokenTypeRead, typ)
	}
	if gone.source == api.TokenSourceConfig {
		return &FieldError{Field: "Type", Err: fmt.Errorf("%s token: %w", typ, ErrTokenFromConfig)}
	}
	secret, err := NewTokenSecret()
	if err != nil {
		return err
	}
	gen := t.generated
	if typ == api.TokenTypeManagement {
		gen.Management = secret
		next.management = newToken(typ, secret, api.TokenSourceGenerated)
	} else {
		gen.Read = secret
		next.read = newToken(typ, secret, api.TokenSourceGenerated)
	}
	if t.path != "" {
		if err := writeFileAtomic(t.path, gen); err != nil {
			return fmt.Errorf("rotate %s token: %w", typ, err)
		}
	}
	t.generated = gen
	t.cur.Store(&next)
	// From here on the old secret authenticates nothing; requests that
	// were made with it end now.
	gone.revoke()
	if typ == api.TokenTypeManagement && t.published != "" {
		if err := writeSecretFile(t.published, []byte(secret+"\n")); err != nil {
			return fmt.Errorf("rotate %s token: the new token works, but the per-user copy was not updated: %w", typ, err)
		}
	}
	return nil
}

// Publish writes the management token to path (0600, its directory 0700)
// for the agent's own user's CLI and Go client, and keeps it there across
// rotations until Unpublish.
func (t *Tokens) Publish(path string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("publish token: %w", err)
	}
	// The tokens directory is ours alone, also if it existed already.
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("publish token: %w", err)
	}
	if err := writeSecretFile(path, []byte(t.Management()+"\n")); err != nil {
		return fmt.Errorf("publish token: %w", err)
	}
	t.published = path
	return nil
}

// Unpublish removes the per-user file if it still holds this agent's
// management token: a later agent on the same address may have replaced it.
// A file left behind would have the CLI offer the token to whoever listens
// on that port next.
func (t *Tokens) Unpublish() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.published == "" {
		return nil
	}
	path := t.published
	t.published = ""
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unpublish token: %w", err)
	}
	if !bytes.Equal(bytes.TrimSpace(raw), []byte(t.Management())) {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("unpublish token: %w", err)
	}
	return nil
}
