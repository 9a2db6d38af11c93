package emf_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/emf"
)

// The line a Store's Observer writes for one outcome: CloudWatch Logs
// turns it into a count of 1 for the metric Duplicate, namespace Idem,
// dimension Source "credits". In a function, pass the Writer to
// idem.Options.Observers and the Store calls Observe once per delivery.
func ExampleNew() {
	metrics, err := emf.New(os.Stdout)
	if err != nil {
		fmt.Println(err)
		return
	}
	metrics.Observe(context.Background(), idem.Observation{
		Outcome: idem.Duplicate,
		Message: idem.Message{ID: "evt_001", Source: "credits"},
		Time:    time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	})
	// Output:
	// {"_aws":{"Timestamp":1767225600000,"CloudWatchMetrics":[{"Namespace":"Idem","Dimensions":[["Source"]],"Metrics":[{"Name":"Duplicate","Unit":"Count"}]}]},"Source":"credits","Duplicate":1}
}
