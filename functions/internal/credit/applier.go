package credit

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
)

// AppliedType is the Type of the message announcing an applied credit.
const AppliedType = "credit.applied"

// Applier is how the functions apply a credit, from their Env: the same
// for the queue and for both webhook routes.
type Applier struct {
	// AccountsTable is the table credited (ACCOUNTS_TABLE).
	AccountsTable string
	// Receipts, when set, gives each credit a receipt first (Apply), under
	// the kit's lease (Lease). Defaults to nil: none.
	Receipts *Receipts
	// LedgerQueueURL, when set, is the SQS queue each applied credit is
	// announced on: one AppliedType message in the effect, written to the
	// outbox in the credit's transaction. Defaults to "": none.
	LedgerQueueURL string
}

// NewApplier is the Applier env describes.
func NewApplier(env Env) Applier {
	return Applier{AccountsTable: env.AccountsTable, Receipts: NewReceipts(env), LedgerQueueURL: env.LedgerQueueURL}
}

// Lease is the lease the handlers run under: Receipts.Lease.
func (a Applier) Lease() *idem.LeaseOptions { return a.Receipts.Lease() }

// Effect is credit c's effect: Apply's write and, with LedgerQueueURL set,
// the credit.applied message {"account", "cents", "id"}, whose id is the
// message's (idem.FromContext), else c.ID.
func (a Applier) Effect(ctx context.Context, c Credit) (idem.Effect, error) {
	w, err := Apply(ctx, a.AccountsTable, c, a.Receipts)
	if err != nil {
		return idem.Effect{}, err
	}
	eff := idem.Effect{Writes: []types.TransactWriteItem{w}}
	if a.LedgerQueueURL == "" {
		return eff, nil
	}
	id := c.ID
	if msg, ok := idem.FromContext(ctx); ok {
		id = msg.ID
	}
	body, err := json.Marshal(struct {
		Account string `json:"account"`
		Cents   int64  `json:"cents"`
		ID      string `json:"id"`
	}{c.Account, c.Cents, id})
	if err != nil {
		return idem.Effect{}, err
	}
	eff.Messages = []idem.OutgoingMessage{{Destination: a.LedgerQueueURL, Type: AppliedType, Body: string(body)}}
	return eff, nil
}
