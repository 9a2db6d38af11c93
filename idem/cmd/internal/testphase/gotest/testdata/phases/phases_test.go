// A long test in miniature, run by TestPhasesThroughGoTest.
package phases

import (
	"testing"

	"github.com/idemkit/kit/idem/cmd/internal/testphase"
)

func TestLong(t *testing.T) {
	p := testphase.Start(t, "replay", "%d messages", 20)
	t.Log("a line of the test's own")
	t.Run("half", func(t *testing.T) { p.Logf("%d of %d", 10, 20) })
	p.End("%d messages, %d lost", 20, 0)
}

func TestStopped(t *testing.T) {
	testphase.Start(t, "cut short", "%d messages", 5)
	t.Skip("ended before its End")
}
