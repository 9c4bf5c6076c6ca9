//go:build !linux

package main_test

import "os/exec"

// dieWithTest is a no-op where the system cannot tie a child's life to its parent's: there, a
// test killed by its timeout may leave its servers running.
func dieWithTest(cmd *exec.Cmd) *exec.Cmd { return cmd }
