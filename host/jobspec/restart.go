package jobspec

import (
	"time"

	"github.com/hashicorp/hcl/v2"
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
}

// decodeRestart decodes the restart block whose policy is the field f.
// Values are kept as written, even out of range, for Validate to judge.
func decodeRestart(d *decoder, b *hcl.Block, f string) *restartBlock {
	if b == nil {
		return nil
	}
	d.At(f, b.DefRange)
	rb := &restartBlock{}
	c := d.Content(b.Body, restartSchema)
	if v, ok := d.FieldWhole(f+".Attempts", c.Attributes["attempts"], 0, maxRestartAttempts); ok {
		rb.attempts = &v
	}
	if v, ok := d.FieldDuration(f+".Interval", c.Attributes["interval"]); ok {
		rb.interval = &v
	}
	if v, ok := d.FieldDuration(f+".Delay", c.Attributes["delay"]); ok {
		rb.delay = &v
	}
	// Nomad's consistency rules (Validate's "Invalid restart policy") are
	// about the policy as a whole, including what it inherits, so a job
	// file reports them at the block, not at the interval.
	d.Unplace(f + ".Interval")
	d.Unplace(f + ".Delay")
	if v, ok := d.FieldString(f+".Mode", c.Attributes["mode"], nil); ok {
		rb.mode = &v
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
