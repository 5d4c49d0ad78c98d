package main

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A handler that acts on one volume follows one shape: check its arguments,
// take the volume's operation lock (ABORTED while another operation on the
// volume is in flight, see store.acquire), read the volume's record
// (NOT_FOUND without one), do its own work, commit the change to the record.
// The helpers here are that shape, so that a handler states only what is
// specific to it and no handler can forget a step.

// required returns INVALID_ARGUMENT naming the first empty field. fields are
// name, value pairs, checked in order, so a request missing several fields
// is told about the first.
func required(fields ...string) error {
	if len(fields)%2 != 0 {
		return status.Errorf(codes.Internal, "mockcsi: required takes name, value pairs, got %d strings", len(fields))
	}
	for i := 0; i < len(fields); i += 2 {
		if fields[i+1] == "" {
			return status.Errorf(codes.InvalidArgument, "%s is required", fields[i])
		}
	}
	return nil
}

// withVolume runs fn on a copy of the volume's record with the volume locked
// against other operations. fn commits its changes with commitVolume; the
// copy is for reading.
func (d *driver) withVolume(id string, fn func(v *volume) error) error {
	release, err := d.store.acquire("volume/" + id)
	if err != nil {
		return err
	}
	defer release()
	v, err := d.lookup(id)
	if err != nil {
		return err
	}
	return fn(v)
}

// editVolume locks the volume and commits fn's change to its record: the
// whole of an operation that only changes state.
func (d *driver) editVolume(id string, fn func(sf *stateFile, v *volume) error) error {
	release, err := d.store.acquire("volume/" + id)
	if err != nil {
		return err
	}
	defer release()
	return d.commitVolume(id, fn)
}

// commitVolume applies fn to the volume's record and writes the state; if fn
// fails nothing is written. sf is the whole state, for checks across volumes
// (capacity, the attach limit) and for deleting the record. The caller holds
// the volume's lock, so the record cannot have vanished since it was read;
// NOT_FOUND is checked anyway rather than assumed.
func (d *driver) commitVolume(id string, fn func(sf *stateFile, v *volume) error) error {
	return d.store.update(func(sf *stateFile) error {
		v, ok := sf.Volumes[id]
		if !ok {
			return status.Errorf(codes.NotFound, "volume %s not found", id)
		}
		return fn(sf, v)
	})
}

// lookup returns a copy of the volume's record, or NOT_FOUND.
func (d *driver) lookup(id string) (*volume, error) {
	var v *volume
	d.store.view(func(sf *stateFile) {
		if rec, ok := sf.Volumes[id]; ok {
			c := *rec
			v = &c
		}
	})
	if v == nil {
		return nil, status.Errorf(codes.NotFound, "volume %s not found", id)
	}
	return v, nil
}

// attachedVolume returns a copy of the volume's record if path is one of its
// staging or target paths, as the volume_path of stats and expand must be;
// NOT_FOUND otherwise.
func (d *driver) attachedVolume(id, path string) (*volume, error) {
	v, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	if !attachedAt(v, path) {
		return nil, status.Errorf(codes.NotFound, "volume %s is not staged or published at %s", id, path)
	}
	return v, nil
}
