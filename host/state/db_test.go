package state

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

func TestOpenNewFileThenReopen(t *testing.T) {
	path := statePath(t)
	db := openTest(t, path, Options{})
	if db.Path() != path {
		t.Errorf("Path() = %q, want %q", db.Path(), path)
	}
	if got, want := db.schemaVersion(), currentVersion(builtinMigrations()); got != want {
		t.Errorf("SchemaVersion() = %d, want %d", got, want)
	}
	if err := db.PutPlugins(testPlugin(1)); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := db.PutPlugins(testPlugin(2)); err == nil {
		t.Fatal("PutPlugins after Close succeeded")
	}

	db = openTest(t, path, Options{})
	if got := mustPlugins(t, db); len(got) != 1 {
		t.Fatalf("after reopen: %d plugins, want 1", len(got))
	}
}

func TestOpenEmptyFiles(t *testing.T) {
	t.Run("zero bytes", func(t *testing.T) {
		path := statePath(t)
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		openTest(t, path, Options{})
	})
	t.Run("bbolt file without buckets", func(t *testing.T) {
		// What a crash between bbolt's file creation and our first commit
		// leaves: nothing to lose, so it is initialised, not refused.
		path := statePath(t)
		b, err := bbolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = b.Close()
		db := openTest(t, path, Options{})
		if err := db.PutPlugins(testPlugin(1)); err != nil {
			t.Fatal(err)
		}
	})
}

func TestOpenRejectsBadInput(t *testing.T) {
	if _, err := Open("", Options{}); err == nil {
		t.Error("Open(\"\") succeeded")
	}
	dir := t.TempDir()
	if _, err := Open(dir, Options{}); err == nil {
		t.Error("Open(directory) succeeded")
	}
}

// TestLockHelperProcess is not a test: TestLockedByAnotherProcess runs the
// test binary again with this as the only test, to hold the lock from a
// separate process exactly as a second agent would.
func TestLockHelperProcess(t *testing.T) {
	path := os.Getenv("STATE_LOCK_HELPER_PATH")
	if path == "" {
		t.Skip("helper process only")
	}
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("helper Open: %v", err)
	}
	os.Stdout.WriteString("locked\n")
	_, _ = io.Copy(io.Discard, os.Stdin) // hold the lock until the parent closes stdin
	if err := db.Close(); err != nil {
		t.Fatalf("helper Close: %v", err)
	}
}

func TestLockedByAnotherProcess(t *testing.T) {
	path := statePath(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "STATE_LOCK_HELPER_PATH="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	t.Cleanup(func() {
		if !exited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper did not report the lock: %q, %v", line, err)
	}

	start := time.Now()
	_, err = Open(path, Options{LockTimeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("Open while locked: %v, want ErrLocked", err)
	}
	for _, want := range []string{path, "locked by another process", "another pluginhost agent with the same data_dir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	// bbolt polls the lock every 50ms and gives up one poll early.
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Errorf("gave up after %s, without waiting for the lock", waited)
	}

	// Once the other process lets go the file opens normally.
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	exited = true
	openTest(t, path, Options{})
}

func TestLockedInProcess(t *testing.T) {
	path := statePath(t)
	first := openTest(t, path, Options{})
	if _, err := Open(path, Options{LockTimeout: 50 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	openTest(t, path, Options{LockTimeout: 50 * time.Millisecond})
}

func TestCorruptFiles(t *testing.T) {
	pageSize := os.Getpagesize()
	cases := []struct {
		name    string
		damage  func(t *testing.T, path string)
		wantErr error
		want    string
	}{
		{
			name: "truncated",
			damage: func(t *testing.T, path string) {
				st, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(path, st.Size()/2); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: ErrCorrupt,
			want:    "truncated",
		},
		{
			name: "truncated to less than a page",
			damage: func(t *testing.T, path string) {
				if err := os.Truncate(path, 100); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: ErrCorrupt,
		},
		{
			name: "random bytes",
			damage: func(t *testing.T, path string) {
				writeFile(t, path, randomBytes(64<<10, 1))
			},
			wantErr: ErrCorrupt,
			want:    "not a valid bbolt database",
		},
		{
			name: "zeroed meta pages",
			damage: func(t *testing.T, path string) {
				overwrite(t, path, 0, make([]byte, 2*pageSize))
			},
			wantErr: ErrCorrupt,
		},
		{
			name: "garbage data pages",
			damage: func(t *testing.T, path string) {
				st, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				overwrite(t, path, int64(2*pageSize), randomBytes(int(st.Size())-2*pageSize, 2))
			},
			wantErr: ErrCorrupt,
		},
		{
			name: "zeroed data pages",
			damage: func(t *testing.T, path string) {
				st, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				overwrite(t, path, int64(2*pageSize), make([]byte, int(st.Size())-2*pageSize))
			},
			wantErr: ErrCorrupt,
		},
		{
			name: "someone else's bbolt file",
			damage: func(t *testing.T, path string) {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				boltUpdate(t, path, func(tx *bbolt.Tx) error {
					b, err := tx.CreateBucket([]byte("widgets"))
					if err != nil {
						return err
					}
					return b.Put([]byte("k"), []byte("v"))
				})
			},
			wantErr: ErrNotStateFile,
			want:    "widgets",
		},
		{
			name: "garbled schema version",
			damage: func(t *testing.T, path string) {
				boltUpdate(t, path, func(tx *bbolt.Tx) error {
					return tx.Bucket([]byte(bucketMeta)).Put([]byte(keySchemaVersion), []byte("one"))
				})
			},
			wantErr: ErrCorrupt,
			want:    "schema version",
		},
		{
			name: "damaged alloc record",
			damage: func(t *testing.T, path string) {
				boltUpdate(t, path, func(tx *bbolt.Tx) error {
					return tx.Bucket([]byte(bucketAllocs)).Bucket([]byte("a-1")).Put([]byte(keyAlloc), []byte("{not json"))
				})
			},
			wantErr: ErrCorrupt,
			want:    "alloc a-1",
		},
		{
			name: "damaged task event",
			damage: func(t *testing.T, path string) {
				boltUpdate(t, path, func(tx *bbolt.Tx) error {
					tb := tx.Bucket([]byte(bucketAllocs)).Bucket([]byte("a-2")).Bucket([]byte(bucketTasks)).Bucket([]byte("web"))
					return tb.Bucket([]byte(bucketEvents)).Put(seqKey(3), []byte("]"))
				})
			},
			wantErr: ErrCorrupt,
			want:    "alloc a-2 task web",
		},
		{
			name: "job record without its version",
			damage: func(t *testing.T, path string) {
				boltUpdate(t, path, func(tx *bbolt.Tx) error {
					jb, err := tx.Bucket([]byte(bucketJobs)).CreateBucket([]byte("web"))
					if err != nil {
						return err
					}
					return putJSON(jb, []byte(keyJob), &Job{ID: "web", Version: 3})
				})
			},
			wantErr: ErrCorrupt,
			want:    "job web has no spec for its version 3",
		},
		{
			// An old file is checked before it is backed up and migrated:
			// a damaged one is refused with nothing written.
			name: "damaged record in a file to upgrade",
			damage: func(t *testing.T, path string) {
				boltUpdate(t, path, func(tx *bbolt.Tx) error {
					if err := putVersion(tx, 1); err != nil {
						return err
					}
					return tx.Bucket([]byte(bucketAllocs)).Bucket([]byte("a-0")).Put([]byte(keyAlloc), []byte("7"))
				})
			},
			wantErr: ErrCorrupt,
			want:    "alloc a-0",
		},
		{
			name: "newer schema",
			damage: func(t *testing.T, path string) {
				boltUpdate(t, path, func(tx *bbolt.Tx) error { return putVersion(tx, 99) })
			},
			wantErr: ErrSchemaTooNew,
			want:    fmt.Sprintf("has schema version 99, this pluginhost understands up to %d: upgrade pluginhost", currentVersion(builtinMigrations())),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := statePath(t)
			populate(t, path, 300)
			tc.damage(t, path)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}

			db, err := Open(path, Options{Logger: testLogger(t), LockTimeout: 100 * time.Millisecond})
			if err == nil {
				_ = db.Close()
				t.Fatal("Open succeeded on a damaged file")
			}
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q should name %s and mention %q", err, path, tc.want)
			}

			// Refusing must not touch the file, and must not keep it locked.
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Error("a refused state file was modified")
			}
			if backups, _ := filepath.Glob(path + ".backup-*"); len(backups) > 0 {
				t.Errorf("a refused state file was backed up: %v", backups)
			}
			assertUnlocked(t, path)
		})
	}
}

// TestOneDamagedMetaPage checks that bbolt's second meta page is used, as it
// should: one torn meta write is what a power cut leaves.
func TestOneDamagedMetaPage(t *testing.T) {
	path := statePath(t)
	populate(t, path, 50)
	pageSize := os.Getpagesize()
	overwrite(t, path, 0, make([]byte, pageSize))
	db := openTest(t, path, Options{})
	if got := len(mustPlugins(t, db)); got < 49 {
		t.Fatalf("%d plugins after losing one meta page, want at least 49", got)
	}
}

func assertUnlocked(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Errorf("state file still locked after a failed Open: %v", err)
		return
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

func boltUpdate(t *testing.T, path string, fn func(tx *bbolt.Tx) error) {
	t.Helper()
	b, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Update(fn); err != nil {
		t.Fatal(err)
	}
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func overwrite(t *testing.T, path string, off int64, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(data, off); err != nil {
		t.Fatal(err)
	}
}
