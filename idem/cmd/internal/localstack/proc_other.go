//go:build !linux

package localstack

import (
	"errors"
	"os"
	"os/exec"
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

// managedInstancesCommand: the emulator's managed-instances mode needs
// Linux's namespaces (see proc_linux.go).
func managedInstancesCommand(rie, dir string, args []string) (*exec.Cmd, error) {
	return nil, managedInstancesSupported()
}

func managedInstancesSupported() error {
	return errors.New("the emulator's managed-instances mode runs on Linux only")
}
