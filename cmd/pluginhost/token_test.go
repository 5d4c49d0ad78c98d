package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hashicorp/cli"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/apiserver"
)

// startTCPAgent serves the fake agent on real loopback TCP with tokens.
func startTCPAgent(t *testing.T) (*apiserver.Server, *apiserver.Tokens) {
	t.Helper()
	tokens, err := apiserver.OpenTokens(apiserver.TokensConfig{})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveAPI(t, apiserver.ServerConfig{Addr: "127.0.0.1:0", Backend: newFakeAgent(), Tokens: tokens})
	return srv, tokens
}

// runCLIEnv runs the CLI in-process with the given environment.
func runCLIEnv(ctx context.Context, env map[string]string, args ...string) result {
	ui := cli.NewMockUi()
	code := runWith(ctx, args, ui, func(k string) string { return env[k] })
	return result{code: code, stdout: ui.OutputWriter.String(), stderr: ui.ErrorWriter.String()}
}

// TestTokenOverTCP: the CLI finds its token in -token, PLUGINHOST_TOKEN or
// the file the agent leaves for its user, in that order, and says what to
// set when the agent refuses it.
func TestTokenOverTCP(t *testing.T) {
	cfgHome := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgHome)
	t.Setenv("SUDO_USER", "")
	srv, tokens := startTCPAgent(t)
	ctx := testCtx(t)
	env := map[string]string{api.EnvAddr: srv.Addr()}

	// No token anywhere: 401 with the ways to give one.
	r := runCLIEnv(ctx, env, "job", "status")
	if r.code != 1 || !strings.Contains(r.stderr, "HTTP 401") || !strings.Contains(r.stderr, api.EnvToken) ||
		!strings.Contains(r.stderr, cfgHome) {
		t.Errorf("no token: %+v", r)
	}
	// The file the agent publishes for its user: no flag needed.
	path, err := api.UserTokenPath(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if err := tokens.Publish(path); err != nil {
		t.Fatal(err)
	}
	if r := runCLIEnv(ctx, env, "job", "status"); r.code != 0 {
		t.Errorf("per-user token file: %+v", r)
	}
	// PLUGINHOST_TOKEN wins over the file, -token over both.
	env[api.EnvToken] = "wrong-token-0123456789"
	if r := runCLIEnv(ctx, env, "job", "status"); r.code != 1 || !strings.Contains(r.stderr, "HTTP 403") ||
		!strings.Contains(r.stderr, "-token") {
		t.Errorf("wrong PLUGINHOST_TOKEN: %+v", r)
	}
	if r := runCLIEnv(ctx, env, "job", "status", "-token", tokens.Read()); r.code != 0 {
		t.Errorf("-token over a wrong PLUGINHOST_TOKEN: %+v", r)
	}
	env[api.EnvToken] = tokens.Read()
	if r := runCLIEnv(ctx, env, "job", "run", "-detach", exampleJob); r.code != 1 || !strings.Contains(r.stderr, "may only GET") {
		t.Errorf("job run with the read token: %+v", r)
	}
	if r := runCLIEnv(ctx, env, "operator", "token"); r.code != 1 || !strings.Contains(r.stderr, "HTTP 403") {
		t.Errorf("operator token with the read token: %+v", r)
	}
	delete(env, api.EnvToken)

	// operator token shows both; -rotate replaces one, the old one fails.
	r = runCLIEnv(ctx, env, "operator", "token", "-json")
	var toks api.ACLTokens
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &toks) != nil || len(toks.Tokens) != 2 ||
		toks.Tokens[0].SecretID != tokens.Management() || toks.Tokens[1].SecretID != tokens.Read() {
		t.Fatalf("operator token -json: %+v", r)
	}
	oldRead, oldMgmt := tokens.Read(), tokens.Management()
	r = runCLIEnv(ctx, env, "operator", "token", "-rotate", "read")
	if r.code != 0 || !strings.Contains(r.stdout, tokens.Read()) || tokens.Read() == oldRead {
		t.Errorf("operator token -rotate read: %+v", r)
	}
	if r := runCLIEnv(ctx, env, "job", "status", "-token", oldRead); r.code != 1 || !strings.Contains(r.stderr, "HTTP 403") {
		t.Errorf("old read token after rotation: %+v", r)
	}
	// Rotating the management token: the per-user file follows, so the
	// next command without flags still works.
	if r := runCLIEnv(ctx, env, "operator", "token", "-rotate", "management"); r.code != 0 || tokens.Management() == oldMgmt {
		t.Errorf("operator token -rotate management: %+v", r)
	}
	if r := runCLIEnv(ctx, env, "job", "status"); r.code != 0 {
		t.Errorf("after the management rotation: %+v", r)
	}
	if r := runCLIEnv(ctx, env, "operator", "token", "-rotate", "everything"); r.code != 1 || !strings.Contains(r.stderr, "-rotate must be") {
		t.Errorf("operator token -rotate everything: %+v", r)
	}
	if err := tokens.Unpublish(); err != nil {
		t.Fatal(err)
	}
}

// TestUnixSocketNoToken: on the unix socket the CLI needs no token, and a
// token given anyway does no harm.
func TestUnixSocketNoToken(t *testing.T) {
	_, addr := startAgent(t)
	ctx := testCtx(t)
	if r := runCLIEnv(ctx, map[string]string{api.EnvAddr: addr}, "job", "status"); r.code != 0 {
		t.Errorf("unix socket: %+v", r)
	}
	if r := runCLIEnv(ctx, map[string]string{api.EnvAddr: addr, api.EnvToken: "whatever-0123456789"}, "job", "status"); r.code != 0 {
		t.Errorf("unix socket with a token: %+v", r)
	}
}
