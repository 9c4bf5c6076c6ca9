//go:build linux

package main_test

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes the process cmd starts die (SIGKILL) when the test process dies, however it
// dies: a test killed by its timeout leaves no server behind.
func dieWithTest(cmd *exec.Cmd) *exec.Cmd {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	return cmd
}
