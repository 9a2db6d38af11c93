//go:build !linux

package localstack

import (
	"os"
	"syscall"
)

// The Lambda Runtime Interface Emulator runs on Linux only; elsewhere the
// stack's children are plain processes.
func childProcAttr() *syscall.SysProcAttr { return nil }

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
