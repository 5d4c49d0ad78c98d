package jobspec

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
)

// maxCount bounds a group's count: one machine does not run more.
const maxCount = 1000

var jobSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "datacenters"}},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "meta"},
		{Type: "group", LabelNames: []string{"name"}},
	},
}

func decodeJob(d *hclstrict.Decoder, block *hcl.Block) *Job {
	job := &Job{
		ID:          block.Labels[0],
		Name:        block.Labels[0],
		Type:        JobTypeService,
		Datacenters: []string{"*"},
	}
	checkName(d, "job ID", job.ID, labelRange(block))
	before := d.Count()
	c := d.Content(block.Body, jobSchema)
	clean := d.Count() == before

	if attr := c.Attributes["type"]; attr != nil {
		if t, ok := d.String(attr, nil); ok {
			switch t {
			case JobTypeService, JobTypeBatch, JobTypeSystem, JobTypeSysBatch:
				job.Type = t
			default:
				d.Errorf(attr.Expr.Range(), "Invalid job type",
					"The job type must be \"service\", \"batch\", \"system\" or \"sysbatch\", got %q.", t)
			}
		}
	}
	if attr := c.Attributes["datacenters"]; attr != nil {
		if dcs, ok := d.StringList(attr, nil); ok {
			if len(dcs) == 0 {
				d.Errorf(attr.Expr.Range(), "Invalid datacenters",
					"The list must not be empty; leave `datacenters` out to run in any datacenter.")
			}
			for _, dc := range dcs {
				if dc == "" {
					d.Errorf(attr.Expr.Range(), "Invalid datacenters", "Datacenter names must not be empty.")
					break
				}
			}
			job.Datacenters = dcs
		}
	}

	var metaBlocks, groupBlocks hcl.Blocks
	for _, b := range c.Blocks {
		switch b.Type {
		case "meta":
			metaBlocks = append(metaBlocks, b)
		case "group":
			groupBlocks = append(groupBlocks, b)
		}
	}
	job.Meta = d.StringMap(d.AtMostOne(metaBlocks), nil)

	if len(groupBlocks) == 0 && clean {
		d.Errorf(block.DefRange, "Missing group", "Job %q has no `group` block; a job needs at least one.", job.ID)
	}
	seen := map[string]*hcl.Block{}
	for _, gb := range groupBlocks {
		name := gb.Labels[0]
		if first, dup := seen[name]; dup {
			d.Errorf(labelRange(gb), "Duplicate group", "Group %q is already defined at %s.", name, first.DefRange)
			continue
		}
		seen[name] = gb
		job.TaskGroups = append(job.TaskGroups, decodeGroup(d, job, gb))
	}
	return job
}
