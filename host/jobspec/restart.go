package jobspec

import (
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
)

// minRestartInterval is Nomad's lower bound on a restart interval.
const minRestartInterval = 5 * time.Second

// defaultRestart returns Nomad's restart policy for a job type. system jobs
// restart like services and sysbatch jobs like batch jobs, as in Nomad.
func defaultRestart(jobType string) RestartPolicy {
	switch jobType {
	case JobTypeBatch, JobTypeSysBatch:
		return RestartPolicy{Attempts: 3, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: RestartModeFail}
	default:
		return RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: RestartModeFail}
	}
}

var restartSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "attempts"}, {Name: "interval"}, {Name: "delay"}, {Name: "mode"}},
}

// restartBlock is a `restart` block as written: only the keys present
// override the policy it is merged over (defaults → group → task).
type restartBlock struct {
	attempts *int
	interval *time.Duration
	delay    *time.Duration
	mode     *string
	rng      hcl.Range
}

func decodeRestart(d *hclstrict.Decoder, b *hcl.Block) *restartBlock {
	if b == nil {
		return nil
	}
	rb := &restartBlock{rng: b.DefRange}
	c := d.Content(b.Body, restartSchema)
	if v, ok := d.Int(c.Attributes["attempts"], 0, 1000); ok {
		rb.attempts = &v
	}
	if v, ok := d.Duration(c.Attributes["interval"]); ok {
		rb.interval = &v
	}
	if v, ok := d.Duration(c.Attributes["delay"]); ok {
		rb.delay = &v
	}
	if attr := c.Attributes["mode"]; attr != nil {
		if v, ok := d.String(attr, nil); ok {
			if v == RestartModeDelay || v == RestartModeFail {
				rb.mode = &v
			} else {
				d.Errorf(attr.Expr.Range(), "Invalid restart mode", "The restart mode must be \"delay\" or \"fail\", got %q.", v)
			}
		}
	}
	return rb
}

// over returns base with the block's keys applied. A nil block returns a
// copy of base, so every group and task owns its policy.
func (rb *restartBlock) over(base RestartPolicy) *RestartPolicy {
	p := base
	if rb == nil {
		return &p
	}
	if rb.attempts != nil {
		p.Attempts = *rb.attempts
	}
	if rb.interval != nil {
		p.Interval = *rb.interval
	}
	if rb.delay != nil {
		p.Delay = *rb.delay
	}
	if rb.mode != nil {
		p.Mode = *rb.mode
	}
	return &p
}

// checkRestart applies Nomad's consistency rules to a merged policy,
// reporting at the block that produced it (defaults are always valid).
func checkRestart(d *hclstrict.Decoder, p *RestartPolicy, rb *restartBlock) {
	if rb == nil {
		return
	}
	switch {
	case p.Interval < minRestartInterval:
		d.Errorf(rb.rng, "Invalid restart policy", "The restart interval must be at least %s, got %s.", minRestartInterval, p.Interval)
	case p.Attempts == 0 && p.Mode == RestartModeDelay:
		d.Errorf(rb.rng, "Invalid restart policy",
			"Zero attempts with mode \"delay\" is ambiguous (Nomad refuses it); use mode \"fail\" to never restart.")
	case time.Duration(p.Attempts)*p.Delay > p.Interval:
		d.Errorf(rb.rng, "Invalid restart policy",
			"%d attempts with a delay of %s cannot fit in an interval of %s.", p.Attempts, p.Delay, p.Interval)
	}
}
