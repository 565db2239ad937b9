//go:build !linux

package main

import "os/exec"

// setDevChildAttrs: outside Linux a dev cluster's nodes share the terminal's process
// group (Ctrl-C reaches them too) and outlive a killed `sluice dev`.
func setDevChildAttrs(*exec.Cmd) {}
