package allocdir

import (
	"os"
	"testing"
)

// BenchmarkBuild measures what the task dir hook does before every launch:
// the allocation's part of the tree and one task's, made (fresh) or found
// and checked (existing) through package beneath.
func BenchmarkBuild(b *testing.B) {
	data := b.TempDir()
	o := Owners{Group: 80000, Chown: os.Geteuid() == 0}
	for _, fresh := range []bool{true, false} {
		name := "existing"
		if fresh {
			name = "fresh"
		}
		b.Run(name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				id := "a"
				if fresh {
					i++
					id = "a" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676%26))
				}
				if err := BuildTask(data, id, "web", o, 80001, 80001); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
