package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/pluginhost/pluginhost/api"
)

func (s *Server) createVolume(w http.ResponseWriter, r *http.Request) {
	s.registerOrCreate(w, r, "create", s.cfg.Backend.CreateVolume)
}

func (s *Server) registerVolume(w http.ResponseWriter, r *http.Request) {
	s.registerOrCreate(w, r, "register", s.cfg.Backend.RegisterVolume)
}

func (s *Server) registerOrCreate(w http.ResponseWriter, r *http.Request, what string,
	call func(ctx context.Context, req *api.CSIVolumeRegisterRequest) (*api.CSIVolumeRegisterResponse, error)) {
	id, err := pathID(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	var req api.CSIVolumeRegisterRequest
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	switch {
	case req.Source != "" && len(req.Volumes) > 0:
		writeError(w, r, s.log, fieldErrorf("Volumes", "give either Source or Volumes, not both"))
		return
	case req.Source == "" && len(req.Volumes) == 0:
		writeError(w, r, s.log, fieldErrorf("Source", "is empty: give a volume file's text in Source or one volume in Volumes"))
		return
	case len(req.Volumes) > 1:
		writeError(w, r, s.log, fieldErrorf("Volumes", "holds %d volumes; one request takes one", len(req.Volumes)))
		return
	case len(req.Volumes) == 1 && req.Volumes[0] == nil:
		writeError(w, r, s.log, fieldErrorf("Volumes[0]", "is null"))
		return
	case len(req.Volumes) == 1 && req.Volumes[0].ID != id:
		writeError(w, r, s.log, fieldErrorf("Volumes[0].ID", "%q does not match the volume %q in the path", req.Volumes[0].ID, id))
		return
	}
	req.PathID = id
	resp, err := call(r.Context(), &req)
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("%s volume %q: %w", what, id, err))
		return
	}
	writeJSON(w, s.log, http.StatusOK, resp)
}

func (s *Server) getVolume(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	v, err := s.cfg.Backend.Volume(r.Context(), id)
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("volume %q: %w", id, err))
		return
	}
	writeJSON(w, s.log, http.StatusOK, v)
}

func (s *Server) deregisterVolume(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	force, err := boolQuery(r, "force")
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	v, err := s.cfg.Backend.DeregisterVolume(r.Context(), id, force)
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("deregister volume %q: %w", id, err))
		return
	}
	writeJSON(w, s.log, http.StatusOK, v)
}

func (s *Server) detachVolume(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	v, err := s.cfg.Backend.DetachVolume(r.Context(), id)
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("detach volume %q: %w", id, err))
		return
	}
	writeJSON(w, s.log, http.StatusOK, v)
}

func (s *Server) deleteVolume(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	v, err := s.cfg.Backend.DeleteVolume(r.Context(), id)
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("delete volume %q: %w", id, err))
		return
	}
	writeJSON(w, s.log, http.StatusOK, v)
}

func (s *Server) listVolumes(w http.ResponseWriter, r *http.Request) {
	if t := r.URL.Query().Get("type"); t != "" && t != "csi" {
		writeError(w, r, s.log, fieldErrorf("type", "pluginhost has only CSI volumes, got %q", t))
		return
	}
	vols, err := s.cfg.Backend.Volumes(r.Context(), r.URL.Query().Get("plugin_id"))
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("list volumes: %w", err))
		return
	}
	if vols == nil {
		vols = []*api.CSIVolumeListStub{}
	}
	writeJSON(w, s.log, http.StatusOK, vols)
}

func (s *Server) externalVolumes(w http.ResponseWriter, r *http.Request) {
	plugin, err := requiredQuery(r, "plugin_id")
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	vols, err := s.cfg.Backend.ExternalVolumes(r.Context(), plugin)
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("volumes of plugin %q: %w", plugin, err))
		return
	}
	if vols == nil {
		vols = []*api.CSIVolumeExternalStub{}
	}
	writeJSON(w, s.log, http.StatusOK, api.CSIVolumeListExternalResponse{Volumes: vols})
}

func (s *Server) createSnapshot(w http.ResponseWriter, r *http.Request) {
	var req api.CSISnapshotCreateRequest
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if len(req.Snapshots) == 0 {
		writeError(w, r, s.log, fieldErrorf("Snapshots", "is empty: name the volume to snapshot in Snapshots[0].SourceVolumeID"))
		return
	}
	var out api.CSISnapshotCreateResponse
	for i, sn := range req.Snapshots {
		if sn == nil || strings.TrimSpace(sn.SourceVolumeID) == "" {
			writeError(w, r, s.log, fieldErrorf(fmt.Sprintf("Snapshots[%d].SourceVolumeID", i), "is empty"))
			return
		}
		created, err := s.cfg.Backend.CreateSnapshot(r.Context(), sn.SourceVolumeID, sn.Name)
		if err != nil {
			writeError(w, r, s.log, fmt.Errorf("snapshot of volume %q: %w", sn.SourceVolumeID, err))
			return
		}
		out.Snapshots = append(out.Snapshots, created)
	}
	writeJSON(w, s.log, http.StatusOK, out)
}

func (s *Server) listSnapshots(w http.ResponseWriter, r *http.Request) {
	plugin, err := requiredQuery(r, "plugin_id")
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	snaps, err := s.cfg.Backend.ListSnapshots(r.Context(), plugin)
	if err != nil {
		writeError(w, r, s.log, fmt.Errorf("snapshots of plugin %q: %w", plugin, err))
		return
	}
	if snaps == nil {
		snaps = []*api.CSISnapshot{}
	}
	writeJSON(w, s.log, http.StatusOK, api.CSISnapshotListResponse{Snapshots: snaps})
}

func (s *Server) deleteSnapshot(w http.ResponseWriter, r *http.Request) {
	plugin, err := requiredQuery(r, "plugin_id")
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	snap, err := requiredQuery(r, "snapshot_id")
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if err := s.cfg.Backend.DeleteSnapshot(r.Context(), plugin, snap); err != nil {
		writeError(w, r, s.log, fmt.Errorf("delete snapshot %q of plugin %q: %w", snap, plugin, err))
		return
	}
	writeJSON(w, s.log, http.StatusOK, struct{}{})
}

// requiredQuery returns a query parameter that must be present.
func requiredQuery(r *http.Request, name string) (string, error) {
	v := strings.TrimSpace(r.URL.Query().Get(name))
	if v == "" {
		return "", fieldErrorf(name, "is required")
	}
	return v, nil
}
