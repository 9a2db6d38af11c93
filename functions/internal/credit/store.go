package credit

import (
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/emf"
)

// CacheSize is how many committed claims each execution environment keeps
// in memory, so that a redelivery to a warm environment costs no call: at
// most about 1,000 × (300 bytes + a stored answer of under 100 bytes).
const CacheSize = 1000

// NewStore is the reference functions' Store on the processed-ids table:
// their logs written Lambda's way (aws-lambda-go's lambdacontext handler:
// JSON with the requestId under LogFormat JSON, at AWS_LAMBDA_LOG_LEVEL),
// the kit's EMF metrics on stdout, which the template's alarms read, and a
// cache of CacheSize claims.
func NewStore(client idem.TransactWriteAPI, env Env) (*idem.Store, error) {
	logger := lambdacontext.NewLogger()
	slog.SetDefault(logger)
	metrics, err := emf.New(os.Stdout)
	if err != nil {
		return nil, err
	}
	return idem.New(client, env.ProcessedTable, func(o *idem.Options) {
		o.RetentionDays = env.RetentionDays
		o.Logger = logger
		o.Observers = []idem.Observer{metrics}
		o.CacheSize = CacheSize
	})
}
