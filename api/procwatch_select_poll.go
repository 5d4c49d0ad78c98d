//go:build unix && (!linux || portable)

package api

func watchProcess(pid int) (processWatch, error) {
	w, err := watchPoll(pid, pollInterval, pidExists)
	if err != nil {
		return nil, err
	}
	return w, nil
}
