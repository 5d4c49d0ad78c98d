package api

import (
	"strings"
	"testing"
)

func TestDefaultSocketPath(t *testing.T) {
	long := "/" + strings.Repeat("x", 100)
	for _, tc := range []struct {
		name, xdg string
		euid      int
		want, err string
	}{
		{name: "user with runtime dir", xdg: "/run/user/1000", euid: 1000, want: "/run/user/1000/pluginhost/api.sock"},
		{name: "user without", euid: 1000, want: "/tmp/pluginhost-1000/api.sock"},
		{name: "relative runtime dir is ignored", xdg: "run/user/1000", euid: 1000, want: "/tmp/pluginhost-1000/api.sock"},
		{name: "root", euid: 0, want: "/run/pluginhost/api.sock"},
		// A root login shell and a systemd unit must agree.
		{name: "root login session", xdg: "/run/user/0/", euid: 0, want: "/run/pluginhost/api.sock"},
		// Tests and nested sessions point root elsewhere.
		{name: "root elsewhere", xdg: "/tmp/t1", euid: 0, want: "/tmp/t1/pluginhost/api.sock"},
		{name: "too long", xdg: long, euid: 1000, err: "over the 107-byte limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := defaultSocketPath(func(k string) string {
				if k == "XDG_RUNTIME_DIR" {
					return tc.xdg
				}
				return ""
			}, tc.euid)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), EnvAddr) {
					t.Fatalf("err = %v, want %q naming %s", err, tc.err, EnvAddr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("= %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// The Windows rules, tested here because they are plain strings: the
// socket under LOCALAPPDATA, which must be a drive path, within sun_path.
func TestWindowsDefaultSocketPath(t *testing.T) {
	for _, tc := range []struct {
		name, local string
		want, err   string
	}{
		{name: "profile", local: `C:\Users\ann\AppData\Local`, want: `C:\Users\ann\AppData\Local\pluginhost\api.sock`},
		{name: "trailing separator", local: `D:\Profiles\ann\Local\`, want: `D:\Profiles\ann\Local\pluginhost\api.sock`},
		{name: "forward slashes", local: `c:/Users/ann/AppData/Local`, want: `c:\Users\ann\AppData\Local\pluginhost\api.sock`},
		{name: "unset", local: "", err: "not a drive path"},
		{name: "relative", local: `Users\ann`, err: "not a drive path"},
		{name: "drive-relative", local: `C:Users`, err: "not a drive path"},
		{name: "network share", local: `\\server\share\ann`, err: "not a drive path"},
		{name: "too long", local: `C:\` + strings.Repeat("x", 100), err: "over the 107-byte limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := windowsDefaultSocketPath(func(k string) string {
				if k == "LOCALAPPDATA" {
					return tc.local
				}
				return ""
			})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), EnvAddr) {
					t.Fatalf("= %q, %v; want an error %q naming %s", got, err, tc.err, EnvAddr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("= %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
