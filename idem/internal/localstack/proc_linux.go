package localstack

import "syscall"

// childProcAttr puts a child in a process group of its own, so a Ctrl-C in
// the terminal reaches the stack alone (which stops its children in order),
// and has the kernel kill it should the stack die without stopping it.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the process group a child leads: the child and the
// processes it started.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
