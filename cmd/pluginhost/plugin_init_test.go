package main

import (
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPluginInit writes a skeleton the way a new author would, points it at
// this checkout (the one step a binary built from an unreleased tree asks
// for), and builds, vets and tests it with the go command: the in-process
// test and the binary sdktest.Build makes, under go-plugin. Then its job
// file passes job validate.
func TestPluginInit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a module of its own")
	}
	ctx := testCtx(t)
	dir := filepath.Join(t.TempDir(), "greeter")
	r := runCLI(t, ctx, "", "plugin", "init", "-dir", dir, "-module", "example.com/greeter", "greeter")
	if r.code != 0 || !strings.Contains(r.stdout, "go mod tidy") {
		t.Fatalf("plugin init: %+v", r)
	}
	for _, f := range []string{"go.mod", "greeterpb/greeter.proto", "greeterpb/greeter.pb.go", "greeterpb/greeter_grpc.pb.go",
		"buf.yaml", "buf.gen.yaml", "Makefile", "main.go", "server.go", "main_test.go", "greeter.hcl", "README.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("skeleton lacks %s: %v", f, err)
		}
	}
	if r := runCLI(t, ctx, "", "plugin", "init", "-dir", dir, "greeter"); r.code != 1 || !strings.Contains(r.stderr, "not empty") {
		t.Errorf("second init into the same dir: %+v", r)
	}

	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	// This checkout's go.sum holds every checksum the skeleton needs (it
	// requires the versions this module builds with), so the checksum
	// database is not asked. Modules come from the module cache, or the
	// proxy where the cache lacks them (a new machine's cache holds what
	// the repository's build reads, and resolving the skeleton's graph
	// reads more go.mod files), as they would for an author.
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	// The skeleton's test builds its binary with sdktest.Build, into a
	// directory of the temporary dir named after the module's directory,
	// which is new at every run: give it a temporary dir that goes with
	// this test. Short, as plugin sockets are made there too.
	tmp, err := os.MkdirTemp("", "pi-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	goCmd := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "TMPDIR="+tmp)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	goCmd("mod", "edit", "-replace", "github.com/pluginhost/pluginhost="+repo,
		"-replace", "github.com/pluginhost/pluginhost/api="+filepath.Join(repo, "api"))
	// With both replaces the whole module graph resolves (go mod tidy's
	// first step); without the second, the repository's requirement of
	// its api module would not.
	goCmd("list", "-m", "all")
	// Not go mod tidy, which the skeleton's README says to run: it also
	// resolves the imports of the dependencies' own tests (testify,
	// gonum, ...), whose checksums this go.sum lacks and only the
	// checksum database has. -mod=mod records what the build needs,
	// which is what this test is about.
	goCmd("vet", "./...")
	goCmd("test", "-count=1", "./...")
	if out, _ := exec.Command("gofmt", "-l", dir).CombinedOutput(); len(out) != 0 {
		t.Errorf("gofmt -l: %s", out)
	}

	r = runCLI(t, ctx, "", "job", "validate", filepath.Join(dir, "greeter.hcl"))
	if r.code != 0 || !strings.Contains(r.stdout, "registers it as plugin greeter/greeter-main") {
		t.Errorf("job validate of the skeleton's job: %+v", r)
	}
	// Before `make build` the job's binary is not there, and validate
	// says so; after it, the job names exactly that binary (issue 26 §7:
	// a bare "greeter" ran go-plugin's example from the agent's PATH).
	bin := filepath.Join(dir, "bin", "greeter")
	if !strings.Contains(r.stderr, bin) || !strings.Contains(r.stderr, "cannot start on this machine") {
		t.Errorf("job validate before make build does not say the command is missing: %+v", r)
	}
	if out, err := exec.Command("make", "-C", dir, "build").CombinedOutput(); err != nil {
		t.Fatalf("make build in the skeleton: %v\n%s", err, out)
	}
	r = runCLI(t, ctx, "", "job", "validate", filepath.Join(dir, "greeter.hcl"))
	if r.code != 0 || strings.Contains(r.stderr, "Warning") {
		t.Errorf("job validate after make build: %+v", r)
	}
}

func TestPluginInitRefusesBadNames(t *testing.T) {
	ctx := testCtx(t)
	for _, name := range []string{"Kv", "k-v", "k_v", "9kv", "", strings.Repeat("k", 32)} {
		r := runCLI(t, ctx, "", "plugin", "init", "-dir", filepath.Join(t.TempDir(), "x"), name)
		if r.code != 1 || !strings.Contains(r.stderr, "lower-case letters and digits") {
			t.Errorf("name %q: %+v", name, r)
		}
	}
}

// TestPluginInitVersionsMatchMakefile: the skeleton pins the generators
// this repository generates its own code with.
func TestPluginInitVersionsMatchMakefile(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[string]string{"BUF_VERSION": bufVersion, "PROTOC_GEN_GO_VERSION": protocGenGoVersion, "PROTOC_GEN_GO_GRPC_VERSION": protocGenGoGRPCVersion} {
		m := regexp.MustCompile(`(?m)^` + v + `\s*\?=\s*(\S+)`).FindSubmatch(mk)
		if m == nil || string(m[1]) != want {
			t.Errorf("Makefile %s = %q, plugin init pins %s", v, m, want)
		}
	}
}

// TestKVRawDescIsProtocGenGos: the raw descriptor plugin init writes, built
// for plugins/kv's names, is byte for byte the one protoc-gen-go wrote into
// kv.pb.go (the .proto files differ only in names). make generate checks
// the whole skeleton against buf; this checks the descriptor without it.
func TestKVRawDescIsProtocGenGos(t *testing.T) {
	src, err := os.ReadFile("../../plugins/kv/kvpb/kv.pb.go")
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?m)^const file_kvpb_kv_proto_rawDesc = "" \+\n(?:\t"[^\n]*" \+\n)*\t"[^\n]*"\n`).Find(src)
	if want == nil {
		t.Fatal("no rawDesc constant in kv.pb.go")
	}
	raw, err := kvRawDesc("kvpb/kv.proto", "pluginhost.kv.v1", "github.com/pluginhost/pluginhost/plugins/kv/kvpb")
	if err != nil {
		t.Fatal(err)
	}
	got, err := format.Source([]byte("package p\n\nconst file_kvpb_kv_proto_rawDesc = " + raw + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if g := strings.TrimPrefix(string(got), "package p\n\n"); g != string(want) {
		t.Errorf("rawDesc differs from protoc-gen-go's:\ngot:\n%s\nwant:\n%s", g, want)
	}
}
