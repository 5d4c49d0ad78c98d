package sdktest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	buildMu sync.Mutex
	builds  = map[string]*buildResult{}
)

type buildResult struct {
	once sync.Once
	path string
	err  error
}

// Build compiles the main package pkg with `go build`, once per test
// process, and returns the binary's path for Start. pkg is what go build
// takes: "." for the package under test, a directory relative to it
// ("./cmd/myplugin") or an import path. The go command must be on PATH, as it
// is under `go test`.
//
//	func TestUnderGoPlugin(t *testing.T) {
//		p := sdktest.Start(t, sdktest.Build(t, "."),
//			sdktest.WithVersions(sdk.HostConnPlugins("kv", sdk.ProtocolVersion)))
//		// ... p.Conn
//	}
//
// Every test of the process that asks for the same package shares one
// build. The binary goes to a directory of the temporary dir named after
// the test's module directory and pkg, and is replaced (atomically, so
// parallel test processes may share it) by every new test process: go
// build's own cache makes an unchanged rebuild cheap, and the binary is
// never older than the source. Builds are not run with -race.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatalf("sdktest: Build: %v", err)
	}
	key := wd + "\x00" + pkg
	buildMu.Lock()
	r, ok := builds[key]
	if !ok {
		r = &buildResult{}
		builds[key] = r
	}
	buildMu.Unlock()
	r.once.Do(func() { r.path, r.err = build(wd, pkg) })
	if r.err != nil {
		t.Fatalf("sdktest: Build(%q): %v", pkg, r.err)
	}
	return r.path
}

func build(wd, pkg string) (string, error) {
	sum := sha256.Sum256([]byte(wd + "\x00" + pkg))
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("sdktest-%d-%s", os.Geteuid(), hex.EncodeToString(sum[:6])))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	// The test runs what it finds here: in a shared temporary dir,
	// the directory must be this user's and closed to everyone else.
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	if err := checkPrivateDir(dir, fi); err != nil {
		return "", err
	}
	name := filepath.Base(filepath.Clean(pkg))
	if name == "." || name == "/" {
		name = filepath.Base(wd)
	}
	// exec finds a program on Windows only by its extension.
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	final := filepath.Join(dir, name)
	tmp, err := os.CreateTemp(dir, name+".build-")
	if err != nil {
		return "", err
	}
	tmpPath := tmp.Name()
	_ = tmp.Close()
	cmd := exec.Command("go", "build", "-o", tmpPath, pkg)
	cmd.Dir = wd
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.Remove(tmpPath)
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	if err := os.Rename(tmpPath, final); err != nil {
		_ = os.Remove(tmpPath)
		return "", err
	}
	return final, nil
}
