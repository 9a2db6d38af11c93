package localdynamo_test

import (
	"context"
	"testing"

	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/idemtest/internal/localdynamo"
)

// TestCreateTableAfterALostAnswer: the answer to enabling a table's TTL is
// lost after the server applied it (a reset under load), and the SDK's
// retry is refused as DynamoDB refuses a second enable: the table is
// created all the same, its TTL on.
func TestCreateTableAfterALostAnswer(t *testing.T) {
	faults := &idemtest.Faults{Rates: map[idemtest.FaultKind]float64{idemtest.FaultLostResponse: 1}, Operations: []string{"UpdateTimeToLive"}, Max: 1}
	client := idemtest.Client(idemtest.Endpoint(t), faults.Option)
	name, err := localdynamo.CreateTable(context.Background(), client, localdynamo.Table{Name: "lost", HashKey: "pk", TTLAttribute: "expiresAt"})
	if err != nil {
		t.Fatalf("want the table, got %v", err)
	}
	if n := faults.Counts()[idemtest.FaultLostResponse]; n != 1 {
		t.Fatalf("want the enable's answer lost once, got %d", n)
	}
	t.Logf("created %s, its TTL enabled though the enable's first answer was lost", name)
}
