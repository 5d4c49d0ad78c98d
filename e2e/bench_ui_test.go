package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pluginhost/pluginhost/api"
)

// BenchmarkUIFirstPage: a job with 1,000 allocations (a batch job of
// count 1000 whose tasks exit at once; the collector told to keep them),
// and the time from navigation to its page drawn (its first 100
// allocations, the rollout counting all 1,000), in a real Chromium on
// loopback. Issue 27 asks for under 200 ms.
//
//	go test ./e2e -run '^$' -bench BenchmarkUIFirstPage -benchtime 20x
func BenchmarkUIFirstPage(b *testing.B) {
	e := newEnv(b, "gc_max_allocs = 5000\n")
	a := e.start()
	tk := shTask("t", e.markerFor("many"), "true")
	src := strings.Replace(jobHCL("many", "    count = 1000\n"+noRestart, tk), `type = "service"`, `type = "batch"`, 1)
	ids := a.runJob("many", src)
	if len(ids) != 1000 {
		b.Fatalf("%d allocations", len(ids))
	}
	a.mustWait("every allocation complete", 10*time.Minute, func(ctx context.Context) (bool, error) {
		j, err := a.client.Job(ctx, "many")
		if err != nil || j.JobSummary == nil {
			return false, err
		}
		return j.JobSummary.Summary["g"].Complete == 1000, nil
	}, api.TopicAllocation)
	br := newBrowser(b)
	base := origin(b, e.uiURL(b))
	br.open(e.uiURL(b))
	for _, page := range []struct{ name, path, done string }{
		{"job", "/ui/jobs/many", `document.querySelectorAll('main section[aria-labelledby=allocs] tbody tr').length === 100 && document.querySelector('.pager') !== null`},
		{"jobs", "/ui/jobs", `!!document.querySelector('main a[href="/ui/jobs/many"]')`},
	} {
		b.Run(page.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				start := time.Now()
				br.run("render "+page.path, chromedp.Navigate(base+page.path),
					chromedp.Poll[chromedp.Void](page.done, chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(2*time.Millisecond)))
				total += time.Since(start)
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/render")
		})
	}
}

// BenchmarkUIEventToScreen: the jobs page is open; a job is submitted
// through the API, and the time from the submission's answer (its events
// are out by then) to its row on the screen is measured, without a
// reload. Issue 27 asks for a p99 under 250 ms.
//
//	go test ./e2e -run '^$' -bench BenchmarkUIEventToScreen -benchtime 100x
func BenchmarkUIEventToScreen(b *testing.B) {
	e := newEnv(b, "")
	a := e.start()
	br := newBrowser(b)
	br.open(e.uiURL(b))
	var lat []time.Duration
	i := 0
	for b.Loop() {
		id := fmt.Sprintf("j%d", i)
		i++
		src := strings.Replace(jobHCL(id, noRestart, shTask("t", e.markerFor(id), "true")), `type = "service"`, `type = "batch"`, 1)
		if _, err := a.client.RegisterJobSource(context.Background(), id+".hcl", []byte(src)); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		br.run("row of "+id, chromedp.Poll[chromedp.Void](fmt.Sprintf(`!!document.querySelector('main a[href="/ui/jobs/%s"]')`, id),
			chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(2*time.Millisecond)))
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}
