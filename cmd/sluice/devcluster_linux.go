package main

import (
	"os/exec"
	"syscall"
)

// setDevChildAttrs puts a dev cluster's node in its own process group, so that Ctrl-C
// reaches only `sluice dev`, which stops the nodes once each (a second signal would
// kill a node without its graceful shutdown); and ends it when `sluice dev` dies.
func setDevChildAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
