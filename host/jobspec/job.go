package jobspec

import (
	"github.com/hashicorp/hcl/v2"
)

var jobSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "datacenters"}},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "meta"},
		{Type: "update"},
		{Type: "group", LabelNames: []string{"name"}},
	},
}

func decodeJob(d *decoder, block *hcl.Block) *Job {
	job := &Job{
		ID:          block.Labels[0],
		Name:        block.Labels[0],
		Type:        JobTypeService,
		Datacenters: []string{"*"},
	}
	d.At("", block.DefRange)
	d.At("ID", labelRange(block))
	before := d.Count()
	c := d.Content(block.Body, jobSchema)
	if d.Count() > before {
		// A misspelt group block is reported as such; "no group" on top
		// of it would be a follow-on error.
		d.Fail("TaskGroups")
	}

	if s, ok := d.FieldString("Type", c.Attributes["type"], nil); ok {
		job.Type = s
	}
	if dcs, ok := d.FieldStringList("Datacenters", c.Attributes["datacenters"], nil); ok {
		job.Datacenters = dcs
	}

	var metaBlocks, updateBlocks, groupBlocks hcl.Blocks
	for _, b := range c.Blocks {
		switch b.Type {
		case "meta":
			metaBlocks = append(metaBlocks, b)
		case "update":
			updateBlocks = append(updateBlocks, b)
		case "group":
			groupBlocks = append(groupBlocks, b)
		}
	}
	job.Meta = d.StringMap(d.AtMostOne(metaBlocks), nil)
	// The job's update block is the default of every group's; it is kept
	// only through the groups, as in Nomad's canonical form.
	jobUpdate := decodeUpdate(d, d.AtMostOne(updateBlocks), "Update").over(nil)

	if len(groupBlocks) > MaxGroups {
		// Nothing of the groups is decoded: the job is refused either way,
		// and decoding is the work the limit is there to spare.
		summary, detail := tooManyGroups(len(groupBlocks))
		d.Errorf(groupBlocks[MaxGroups].DefRange, summary, "%s", detail)
		d.Fail("TaskGroups")
		return job
	}
	var sums jobSize
	for _, gb := range groupBlocks {
		if sums.over {
			// Refused already; the rest is work the limit is there
			// to spare.
			break
		}
		f := fieldIndex("TaskGroups", len(job.TaskGroups))
		g := decodeGroup(d, job, jobUpdate, gb, f, &sums)
		if jobUpdate != nil {
			// A problem with a value the group took from the job's block
			// is shown where it is written.
			d.Inherit(f+".Update", "Update")
		}
		job.TaskGroups = append(job.TaskGroups, g)
	}
	return job
}
