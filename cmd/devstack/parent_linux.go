package main

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// stopWithParent asks the kernel to send us SIGTERM if our parent (make) dies, so
// killing make never leaves the platform running.
func stopWithParent() { _ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0) }
