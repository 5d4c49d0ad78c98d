//go:build !portable

package api

func watchProcess(pid int) (processWatch, error) {
	w, err := watchPidfd(pid)
	if err != nil {
		return nil, err
	}
	return w, nil
}
