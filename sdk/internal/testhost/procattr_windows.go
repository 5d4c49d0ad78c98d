package main

import "syscall"

// ownSession is, without sessions, a process group of the plugin's own,
// which keeps the console's Ctrl-C off it.
func ownSession() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}
