// Command testtask is a task for the driver and task runner tests. Its
// first argument picks a behaviour:
//
//	sleep            print "ready", block until a signal kills it
//	ignore-int       like sleep, but SIGINT is ignored (kill_timeout tests)
//	exit N           exit with code N at once
//	env FILE         write the environment to FILE, then sleep
//	child            start a grandchild "sleep", print its pid, sleep
//	burst N          on each SIGUSR1 write N 100-byte lines to stdout and
//	                 stderr; exit 0 on SIGUSR2
package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		os.Exit(2)
	}
	switch os.Args[1] {
	case "sleep":
		fmt.Println("ready")
		block()
	case "quiet":
		// Blocks without writing: its output pipes may have no reader.
		block()
	case "ignore-int":
		signal.Ignore(syscall.SIGINT)
		fmt.Println("ready")
		block()
	case "exit":
		n, _ := strconv.Atoi(os.Args[2])
		os.Exit(n)
	case "env":
		if err := os.WriteFile(os.Args[2], []byte(strings.Join(os.Environ(), "\n")+"\n"), 0o600); err != nil {
			os.Exit(3)
		}
		block()
	case "child":
		c := exec.Command(os.Args[0], "sleep")
		if err := c.Start(); err != nil {
			os.Exit(3)
		}
		fmt.Println(c.Process.Pid)
		block()
	case "burst":
		n, _ := strconv.Atoi(os.Args[2])
		line := strings.Repeat("x", 99) + "\n"
		ch := make(chan os.Signal, 4)
		signal.Notify(ch, syscall.SIGUSR1, syscall.SIGUSR2)
		signal.Ignore(syscall.SIGPIPE)
		fmt.Println("ready")
		for s := range ch {
			if s == syscall.SIGUSR2 {
				os.Exit(0)
			}
			for range n {
				os.Stdout.WriteString(line)
				os.Stderr.WriteString(line)
			}
		}
	}
	os.Exit(2)
}

// block waits forever; a bare select{} would be Go's deadlock error (exit 2).
func block() {
	for {
		time.Sleep(time.Hour)
	}
}
