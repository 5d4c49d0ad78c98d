package logmon

import (
	"context"
	"testing"
)

// BenchmarkLaunch shows what the task launch path saves by not waiting for
// the shipper: Spawn returns once the process exists, Start once the
// shipper has exec'd, started its runtime and opened its files.
func BenchmarkLaunch(b *testing.B) {
	for _, mode := range []string{"spawn", "start"} {
		b.Run(mode, func(b *testing.B) {
			cfg := Config{Command: []string{shipper}, Dir: openLogs(b, b.TempDir()), Task: "web", MaxFiles: 2, MaxFileSize: 1 << 20}
			ctx := context.Background()
			for b.Loop() {
				var p *Process
				var err error
				if mode == "spawn" {
					p, err = Spawn(cfg)
				} else {
					p, err = Start(ctx, cfg)
				}
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := p.Ready(ctx); err != nil {
					b.Fatal(err)
				}
				p.CloseWriters()
				<-p.Done()
				b.StartTimer()
			}
		})
	}
}
