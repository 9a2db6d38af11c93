package localstack

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/idemkit/kit/idem/cmd/internal/testphase"
	"github.com/idemkit/kit/idem/idemtest"
)

// Things the tests share, built or started once per test binary.
var shared struct {
	dir string

	rieOnce sync.Once
	rie     string
	rieErr  error

	echoOnce sync.Once
	echo     string
	echoErr  error

	sqsOnce sync.Once
	sqs     *idemtest.Server
	sqsErr  error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "localstack-test-")
	if err != nil {
		panic(err)
	}
	shared.dir = dir
	idemtest.Main(runThen{m, func() {
		if shared.sqs != nil {
			_ = shared.sqs.Stop()
		}
		os.RemoveAll(dir)
	}})
}

// runThen runs the tests, then cleans up after them.
type runThen struct {
	m       *testing.M
	cleanup func()
}

func (r runThen) Run() int {
	defer r.cleanup()
	return r.m.Run()
}

// testRIE builds the Lambda Runtime Interface Emulator once.
func testRIE(t *testing.T) string {
	t.Helper()
	shared.rieOnce.Do(func() {
		phase := testphase.Start(t, "emulator", "building the Lambda Runtime Interface Emulator (go install %s@%s)", RIEPackage, RIEVersion)
		shared.rie, shared.rieErr = BuildRIE(context.Background(), "", shared.dir)
		phase.End("built")
	})
	if shared.rieErr != nil {
		t.Fatal(shared.rieErr)
	}
	return shared.rie
}

// testEcho builds testdata/echo, a function that answers with its event.
func testEcho(t *testing.T) string {
	t.Helper()
	shared.echoOnce.Do(func() {
		dir := filepath.Join(shared.dir, "echo")
		shared.echo = filepath.Join(dir, "bootstrap")
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", shared.echo, "./testdata/echo")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			shared.echoErr = &buildError{err, out}
		}
	})
	if shared.echoErr != nil {
		t.Fatal(shared.echoErr)
	}
	return shared.echo
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + string(e.out) }

// testSQS is moto's SQS, one server for the test binary.
func testSQS(t *testing.T) string {
	t.Helper()
	if ep := os.Getenv("AWS_ENDPOINT_URL_SQS"); ep != "" {
		return ep
	}
	shared.sqsOnce.Do(func() {
		shared.sqs, shared.sqsErr = idemtest.StartSQS(context.Background(), func(o *idemtest.ServerOptions) { o.Log = os.Stderr })
	})
	if shared.sqsErr != nil {
		t.Fatal(shared.sqsErr)
	}
	return shared.sqs.Endpoint
}
