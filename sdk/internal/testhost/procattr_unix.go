//go:build unix

package main

import "syscall"

// ownSession starts the plugin in a session of its own, as the agent does.
func ownSession() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
