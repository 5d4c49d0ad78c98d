package dynamic

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzRegistryOps drives the registry with arbitrary sequences of register,
// re-register, update, deregister and invalid calls, and checks it against a
// model after every step: the allocations, who is active, the exact event
// stream, and that a registry restored from the store is identical.
func FuzzRegistryOps(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 3, 0, 2, 3, 1, 3, 0, 0})
	f.Add([]byte{0, 1, 0, 4, 0, 7, 3, 4, 3, 1, 4, 9})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 400 {
			ops = ops[:400]
		}
		const typ = PluginTypeCSINode
		store := NewMemStore()
		r := newRegistry(t, store)
		ch := r.Subscribe(t.Context(), typ)

		type alloc struct{ id, version string }
		model := map[string][]alloc{} // name → allocations in Seq order
		var wants []want
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%5, ops[i+1]
			name := fmt.Sprint("p", arg%3)
			id := fmt.Sprint("a", (arg/3)%5)
			list := model[name]
			idx := slices.IndexFunc(list, func(a alloc) bool { return a.id == id })
			version := ""
			if idx >= 0 {
				version = list[idx].version
			}
			switch op {
			case 0, 1: // register (op 1 with a changed version)
				if op == 1 {
					version += "+"
				}
				p := node(name, id)
				p.Version = version
				if err := r.Register(p); err != nil {
					t.Fatalf("Register: %v", err)
				}
				switch {
				case idx < 0:
					model[name] = append(list, alloc{id, version})
					wants = append(wants, want{EventRegistered, id, true})
				case list[idx].version != version:
					list[idx].version = version
					wants = append(wants, want{EventUpdated, id, idx == len(list)-1})
				}
			case 2, 3:
				if err := r.Deregister(typ, name, id); err != nil {
					t.Fatalf("Deregister: %v", err)
				}
				if idx >= 0 {
					wants = append(wants, want{EventDeregistered, id, false})
					if idx == len(list)-1 && len(list) > 1 {
						wants = append(wants, want{EventActivated, list[idx-1].id, true})
					}
					model[name] = slices.Delete(list, idx, idx+1)
				}
			case 4: // bad input never changes anything
				p := node(name, id)
				p.ConnectionInfo = nil
				if err := r.Register(p); !errors.Is(err, ErrInvalid) {
					t.Fatalf("invalid Register: %v", err)
				}
			}
			for n := range 3 {
				name := fmt.Sprint("p", n)
				list := model[name]
				wantActive := ""
				if len(list) > 0 {
					wantActive = list[len(list)-1].id
				}
				if got := activeAlloc(r, typ, name); got != wantActive {
					t.Fatalf("op %d: %s active %q, want %q", i/2, name, got, wantActive)
				}
			}
		}
		var wantAll []string
		for n := range 3 {
			for _, a := range model[fmt.Sprint("p", n)] {
				wantAll = append(wantAll, fmt.Sprintf("p%d/%s", n, a.id))
			}
		}
		if got := allocIDs(r.ListAllocs(typ)); got != strings.Join(wantAll, ",") {
			t.Fatalf("allocs %q, want %q", got, strings.Join(wantAll, ","))
		}
		expectEvents(t, ch, wants...)
		expectNothingBefore(t, r, ch, typ)

		restored := newRegistry(t, store)
		if a, b := r.ListAllocs(typ), restored.ListAllocs(typ); !reflect.DeepEqual(a, b) {
			t.Fatalf("restore differs:\n%+v\n%+v", a, b)
		}
	})
}
