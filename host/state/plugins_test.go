package state

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/pluginhost/pluginhost/dynamic"
	"go.etcd.io/bbolt"
)

func TestPluginStore(t *testing.T) {
	path := statePath(t)
	db := openTest(t, path, Options{})
	for i := range 10 {
		if err := db.PutPlugins(testPlugin(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Replace one, delete one, delete one that never existed.
	changed := testPlugin(3)
	changed.Version = "2.0.0"
	if err := db.PutPlugins(changed); err != nil {
		t.Fatal(err)
	}
	p4 := testPlugin(4)
	if err := db.DeletePlugin(p4.Type, p4.Name, p4.AllocID); err != nil {
		t.Fatal(err)
	}
	if err := db.DeletePlugin("csi-node", "nope", "nope"); err != nil {
		t.Fatalf("deleting a missing record: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	got := mustPlugins(t, openTest(t, path, Options{}))
	want := map[string]*dynamic.PluginInfo{}
	for i := range 10 {
		if i == 4 {
			continue
		}
		p := testPlugin(i)
		if i == 3 {
			p = changed
		}
		want[p.Type+"/"+p.Name+"/"+p.AllocID] = p
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("restored plugins differ:\n got %v\nwant %v", got, want)
	}
}

func TestPutPluginRejectsIncompleteInfo(t *testing.T) {
	db := openTest(t, statePath(t), Options{})
	for _, p := range []*dynamic.PluginInfo{nil, {Name: "n", AllocID: "a"}, {Type: "t", AllocID: "a"}, {Type: "t", Name: "n"}} {
		if err := db.PutPlugins(p); err == nil {
			t.Errorf("PutPlugins(%+v) succeeded", p)
		}
	}
	if got := mustPlugins(t, db); len(got) != 0 {
		t.Fatalf("rejected plugins were stored: %v", got)
	}
}

func TestPluginKeyIsUnambiguous(t *testing.T) {
	triples := [][3]string{
		{"a", "bc", "d"}, {"ab", "c", "d"}, {"a", "b", "cd"}, {"a\x01b", "c", "d"},
		{"a", "\x01bc", "d"}, {"csi-node", "x/y", "z"}, {"csi-node/x", "y", "z"},
	}
	seen := map[string][3]string{}
	for _, tr := range triples {
		k := pluginKey(tr[0], tr[1], tr[2])
		if prev, dup := seen[string(k)]; dup {
			t.Fatalf("%q and %q share key %q", prev, tr, k)
		}
		seen[string(k)] = tr
		a, b, c, err := parsePluginKey(k)
		if err != nil || [3]string{a, b, c} != tr {
			t.Fatalf("parse(%q) = %q %q %q %v, want %q", k, a, b, c, err, tr)
		}
	}
	for _, bad := range [][]byte{nil, {5, 'a'}, {1, 'a', 1, 'b'}, append(pluginKey("a", "b", "c"), 'x'), {0x80}} {
		if _, _, _, err := parsePluginKey(bad); err == nil {
			t.Errorf("parsePluginKey(%q) accepted a malformed key", bad)
		}
	}
}

func FuzzPluginKey(f *testing.F) {
	f.Add("csi-node", "hostpath", "0f8a", []byte{8, 'c'})
	f.Add("", "", "", []byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, typ, name, alloc string, raw []byte) {
		k := pluginKey(typ, name, alloc)
		a, b, c, err := parsePluginKey(k)
		if err != nil || a != typ || b != name || c != alloc {
			t.Fatalf("round trip of %q %q %q: %q %q %q %v", typ, name, alloc, a, b, c, err)
		}
		// Any byte string either parses to the triple that encodes to it,
		// or is rejected; it never panics.
		if a, b, c, err := parsePluginKey(raw); err == nil && !bytes.Equal(pluginKey(a, b, c), raw) {
			t.Fatalf("parsePluginKey(%q) accepted a key it would not write", raw)
		}
	})
}

func TestPluginsReportsDamagedRecords(t *testing.T) {
	cases := map[string]func(b *bbolt.Bucket) error{
		"bad JSON": func(b *bbolt.Bucket) error {
			return b.Put(pluginKey("csi-node", "x", "a"), []byte("{not json"))
		},
		"key and value disagree": func(b *bbolt.Bucket) error {
			return putJSON(b, pluginKey("csi-node", "x", "a"), testPlugin(1))
		},
		"malformed key": func(b *bbolt.Bucket) error {
			return putJSON(b, []byte("csi-node/x/a"), testPlugin(1))
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			db := openTest(t, statePath(t), Options{})
			if err := db.PutPlugins(testPlugin(2)); err != nil {
				t.Fatal(err)
			}
			if err := db.bolt.Update(func(tx *bbolt.Tx) error { return damage(tx.Bucket([]byte(bucketPlugins))) }); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Plugins(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Plugins() over a damaged record: %v, want ErrCorrupt", err)
			}
			if _, err := dynamic.New(dynamic.Config{Store: db}); err == nil {
				t.Fatal("registry restored over a damaged record without error")
			}
		})
	}
}

// registrySnapshot is everything observable about a registry's contents,
// with times stripped of monotonic readings and zones (which a restart
// cannot keep) so that equal instants compare equal.
func registrySnapshot(r *dynamic.Registry) map[string][]*dynamic.PluginInfo {
	out := map[string][]*dynamic.PluginInfo{}
	for _, typ := range []string{dynamic.PluginTypeCSINode, dynamic.PluginTypeCSIController, "custom"} {
		for _, p := range r.ListAllocs(typ) {
			p.RegisteredAt = p.RegisteredAt.UTC()
			out["allocs/"+typ] = append(out["allocs/"+typ], p)
		}
		for _, p := range r.List(typ) {
			p.RegisteredAt = p.RegisteredAt.UTC()
			out["active/"+typ] = append(out["active/"+typ], p)
		}
	}
	return out
}

func TestRegistryRestoresFromState(t *testing.T) {
	path := statePath(t)
	db := openTest(t, path, Options{})
	reg, err := dynamic.New(dynamic.Config{Store: db, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	reg1 := func(typ, name, alloc, version string) {
		t.Helper()
		err := reg.Register(&dynamic.PluginInfo{
			Type: typ, Name: name, Version: version, AllocID: alloc,
			ConnectionInfo: &dynamic.ConnectionInfo{SocketPath: "/run/ph/" + alloc + "/csi.sock"},
			Options:        map[string]string{"MountDir": "/csi"},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// A rolling update of "hostpath" (three allocations, the newest
	// deregistered so an older one is active again), a monolith registered
	// as both types, a changed re-registration, and a custom type.
	reg1(dynamic.PluginTypeCSINode, "hostpath", "a1", "1.0")
	reg1(dynamic.PluginTypeCSINode, "hostpath", "a2", "1.1")
	reg1(dynamic.PluginTypeCSINode, "hostpath", "a3", "1.2")
	if err := reg.Deregister(dynamic.PluginTypeCSINode, "hostpath", "a3"); err != nil {
		t.Fatal(err)
	}
	reg1(dynamic.PluginTypeCSINode, "mono", "m1", "2.0")
	reg1(dynamic.PluginTypeCSIController, "mono", "m1", "2.0")
	reg1(dynamic.PluginTypeCSINode, "hostpath", "a1", "1.0.1")
	reg1("custom", "thing", "c1", "0.1")
	for i := range 20 {
		reg1(dynamic.PluginTypeCSINode, fmt.Sprintf("many-%d", i%3), fmt.Sprintf("x%d", i), "1")
	}
	want := registrySnapshot(reg)
	reg.Shutdown()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db2 := openTest(t, path, Options{})
	restored, err := dynamic.New(dynamic.Config{Store: db2, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(restored.Shutdown)
	got := registrySnapshot(restored)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("restored registry differs:\n got %s\nwant %s", dump(got), dump(want))
	}
	if active, ok := restored.Active(dynamic.PluginTypeCSINode, "hostpath"); !ok || active.AllocID != "a2" {
		t.Fatalf("active hostpath after restore: %+v, want a2", active)
	}

	// A registration after the restore is numbered after every stored one,
	// so it becomes active, and it is persisted like the others.
	if err := restored.Register(&dynamic.PluginInfo{Type: dynamic.PluginTypeCSINode, Name: "hostpath", Version: "1.3",
		AllocID: "a4", ConnectionInfo: &dynamic.ConnectionInfo{SocketPath: "/run/ph/a4/csi.sock"}}); err != nil {
		t.Fatal(err)
	}
	a4, ok := restored.Active(dynamic.PluginTypeCSINode, "hostpath")
	if !ok || a4.AllocID != "a4" {
		t.Fatalf("active after new registration: %+v", a4)
	}
	for _, ps := range want {
		for _, p := range ps {
			if p.Seq >= a4.Seq {
				t.Fatalf("new registration got Seq %d, not above stored %d", a4.Seq, p.Seq)
			}
		}
	}
	if _, ok := mustPlugins(t, db2)[dynamic.PluginTypeCSINode+"/hostpath/a4"]; !ok {
		t.Fatal("registration after restore not persisted")
	}
}

func dump(m map[string][]*dynamic.PluginInfo) string {
	var b bytes.Buffer
	for k, ps := range m {
		fmt.Fprintf(&b, "\n  %s:", k)
		for _, p := range ps {
			fmt.Fprintf(&b, " %+v", *p)
		}
	}
	return b.String()
}
