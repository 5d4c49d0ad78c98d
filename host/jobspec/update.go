package jobspec

import (
	"time"

	"github.com/hashicorp/hcl/v2"
)

// Health check modes of an update block. pluginhost has no service checks,
// so "checks" means what "task_states" means: every task running (and, for
// a CSI plugin task, the plugin registered and healthy) for
// min_healthy_time. "manual" needs Nomad's promote API and is refused.
const (
	HealthCheckChecks     = "checks"
	HealthCheckTaskStates = "task_states"
)

// UpdateStrategy is an `update` block: when a new version's allocation counts
// as healthy, and what happens when one does not become healthy in time.
// Only the keys written override the job level, which overrides Nomad's
// defaults (DefaultUpdate).
type UpdateStrategy struct {
	MaxParallel      int
	HealthCheck      string
	MinHealthyTime   time.Duration
	HealthyDeadline  time.Duration
	ProgressDeadline time.Duration
	AutoRevert       bool
	Canary           int
	Stagger          time.Duration
}

// DefaultUpdate is Nomad's update block with every key left out.
func DefaultUpdate() UpdateStrategy {
	return UpdateStrategy{
		MaxParallel: 1, HealthCheck: HealthCheckChecks, MinHealthyTime: 10 * time.Second,
		HealthyDeadline: 5 * time.Minute, ProgressDeadline: 10 * time.Minute, Stagger: 30 * time.Second,
	}
}

var updateSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "max_parallel"}, {Name: "health_check"}, {Name: "min_healthy_time"}, {Name: "healthy_deadline"},
		{Name: "progress_deadline"}, {Name: "auto_revert"}, {Name: "canary"}, {Name: "stagger"},
		{Name: "auto_promote"},
	},
}

// updateBlock is an update block as written: nil fields are unset.
type updateBlock struct {
	maxParallel, canary                                    *int
	healthCheck                                            *string
	minHealthy, healthyDeadline, progressDeadline, stagger *time.Duration
	autoRevert, autoPromote                                *bool
}

func decodeUpdate(d *decoder, b *hcl.Block, f string) *updateBlock {
	if b == nil {
		return nil
	}
	d.At(f, b.DefRange)
	c := d.Content(b.Body, updateSchema)
	ub := &updateBlock{}
	if v, ok := d.FieldWhole(f+".MaxParallel", c.Attributes["max_parallel"], 0, maxCount); ok {
		ub.maxParallel = &v
	}
	if v, ok := d.FieldWhole(f+".Canary", c.Attributes["canary"], 0, maxCount); ok {
		ub.canary = &v
	}
	if v, ok := d.FieldString(f+".HealthCheck", c.Attributes["health_check"], nil); ok {
		ub.healthCheck = &v
	}
	for _, x := range []struct {
		key, field string
		dst        **time.Duration
	}{
		{"min_healthy_time", "MinHealthyTime", &ub.minHealthy},
		{"healthy_deadline", "HealthyDeadline", &ub.healthyDeadline},
		{"progress_deadline", "ProgressDeadline", &ub.progressDeadline},
		{"stagger", "Stagger", &ub.stagger},
	} {
		if v, ok := d.FieldDuration(f+"."+x.field, c.Attributes[x.key]); ok {
			*x.dst = &v
		}
	}
	if v, ok := d.FieldBool(f+".AutoRevert", c.Attributes["auto_revert"]); ok {
		ub.autoRevert = &v
	}
	if v, ok := d.FieldBool(f+".AutoPromote", c.Attributes["auto_promote"]); ok && v {
		// auto_promote only means something with canaries, which are
		// refused; false is harmless and accepted.
		d.Errorf(c.Attributes["auto_promote"].Expr.Range(), "Unsupported update setting",
			"pluginhost has no canaries, so auto_promote cannot be true.")
	}
	return ub
}

// over returns base with the block's keys applied; nil returns nil when
// base is nil (no update block anywhere), else a copy of base.
func (ub *updateBlock) over(base *UpdateStrategy) *UpdateStrategy {
	if ub == nil {
		if base == nil {
			return nil
		}
		c := *base
		return &c
	}
	u := DefaultUpdate()
	if base != nil {
		u = *base
	}
	set := func(dst *time.Duration, v *time.Duration) {
		if v != nil {
			*dst = *v
		}
	}
	if ub.maxParallel != nil {
		u.MaxParallel = *ub.maxParallel
	}
	if ub.canary != nil {
		u.Canary = *ub.canary
	}
	if ub.healthCheck != nil {
		u.HealthCheck = *ub.healthCheck
	}
	set(&u.MinHealthyTime, ub.minHealthy)
	set(&u.HealthyDeadline, ub.healthyDeadline)
	set(&u.ProgressDeadline, ub.progressDeadline)
	set(&u.Stagger, ub.stagger)
	if ub.autoRevert != nil {
		u.AutoRevert = *ub.autoRevert
	}
	return &u
}
