package localstack

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

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

// managedInstancesCommand runs the emulator in its managed-instances mode
// (AWS_LAMBDA_MAX_CONCURRENCY in its environment), which, unlike its
// default mode, runs no bootstrap named on its command line: only
// /var/runtime/bootstrap, /var/task/bootstrap or /opt/bootstrap, from
// /var/task, as user 993 (aws-lambda-rie, internal/lambda-managed-instances:
// rapid/handlers.go, supervisor/local). So it runs, as root, in a mount
// namespace of its own where /var is an empty tmpfs holding dir (its
// working directory, which stays reachable should it lie under /var) at
// /var/task, and nothing changes on this machine; and in a PID namespace of
// its own, whose processes, the bootstrap (in a process group of its own)
// included, the kernel kills when the emulator ends.
func managedInstancesCommand(rie, dir string, args []string) (*exec.Cmd, error) {
	if err := managedInstancesSupported(); err != nil {
		return nil, err
	}
	const script = `set -e
mount --make-rprivate /
mount -t tmpfs -o mode=0755 tmpfs /var
mkdir /var/task /var/runtime
mount --bind . /var/task
# The emulator looks here first, and warns when nothing is there.
ln -s /var/task/bootstrap /var/runtime/bootstrap
exec "$@"`
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "sh", rie}, args...)...)
	cmd.Dir = dir
	cmd.SysProcAttr = childProcAttr()
	cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWNS | syscall.CLONE_NEWPID
	return cmd, nil
}

// managedInstancesSupported says why the emulator's managed-instances mode
// cannot run here, or nil.
func managedInstancesSupported() error {
	if os.Geteuid() != 0 {
		return errors.New("the emulator's managed-instances mode runs the bootstrap as user 993 from /var/task: run as root (as in a container), or with a maximum concurrency of 1")
	}
	return nil
}
