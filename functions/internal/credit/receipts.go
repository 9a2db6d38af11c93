package credit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
)

// ReceiptTimeout bounds one call to the receipts service: one that hangs
// fails the delivery, which is retried, well inside the functions'
// timeouts (10 and 30 seconds).
const ReceiptTimeout = 5 * time.Second

// Receipts is the receipts service each credit obtains a receipt from
// before it is applied (RECEIPTS_URL), a stand-in for a payment API: it
// deduplicates the Idempotency-Key it is sent for 24 hours, so a
// redelivery that calls again gets the same receipt back.
type Receipts struct {
	URL    string
	Client *http.Client // defaults to one with ReceiptTimeout
}

// NewReceipts is the receipts service at env.ReceiptsURL, or nil when it
// is unset.
func NewReceipts(env Env) *Receipts {
	if env.ReceiptsURL == "" {
		return nil
	}
	return &Receipts{URL: env.ReceiptsURL, Client: &http.Client{Timeout: ReceiptTimeout}}
}

// Lease is how the functions' handlers run when they call the receipts
// service: under the kit's lease (idem.Store.ProcessLeased), so that two
// deliveries of one credit never call at once; nil when r is.
func (r *Receipts) Lease() *idem.LeaseOptions {
	if r == nil {
		return nil
	}
	return &idem.LeaseOptions{} // the defaults: a minute at most, inside the invoke; keys kept 24 hours, as the service does
}

// Obtain asks for the receipt of credit c, delivered as message id, with
// key as its Idempotency-Key: POST {"id", "account", "cents"}, answered
// 200 or 201 {"receipt": "…"}.
func (r *Receipts) Obtain(ctx context.Context, key, id string, c Credit) (string, error) {
	body, err := json.Marshal(struct {
		ID      string `json:"id"`
		Account string `json:"account"`
		Cents   int64  `json:"cents"`
	}{id, c.Account, c.Cents})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("receipts: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	client := r.Client
	if client == nil {
		client = &http.Client{Timeout: ReceiptTimeout}
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("receipts: %w", err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", fmt.Errorf("receipts: reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("receipts: answered %d: %.200s", resp.StatusCode, answer)
	}
	var out struct {
		Receipt string `json:"receipt"`
	}
	if err := json.Unmarshal(answer, &out); err != nil || out.Receipt == "" {
		return "", fmt.Errorf("receipts: answered %d without a receipt: %.200s", resp.StatusCode, answer)
	}
	return out.Receipt, nil
}

// Apply is the credit's effect: with r nil, Write; else, first the
// receipt from r, called with the lease's key (the handler must run under
// r.Lease()), stored as the account's lastReceipt in the same write.
func Apply(ctx context.Context, table string, c Credit, r *Receipts) (types.TransactWriteItem, error) {
	if r == nil {
		return Write(table, c)
	}
	lease, ok := idem.LeaseFromContext(ctx)
	if !ok {
		return types.TransactWriteItem{}, errors.New("credit: a receipt is obtained under a lease; run the handler with Receipts.Lease()")
	}
	id := c.ID
	if msg, ok := idem.FromContext(ctx); ok {
		id = msg.ID
	}
	receipt, err := r.Obtain(ctx, ReceiptKey(lease.Key), id, c)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return idem.Update(table, map[string]string{"account": c.Account},
		expression.Add(expression.Name("balance"), expression.Value(c.Cents)).
			Set(expression.Name("lastReceipt"), expression.Value(receipt)))
}

// ReceiptKey is the Idempotency-Key a claim key is sent as: the key
// itself when it is at most 255 printable ASCII characters, as payment
// APIs take them; else "sha256:" and its SHA-256 in hex, as stable across
// redeliveries (an SQS message id may hold any character, and a claim key
// runs to 2 KB).
func ReceiptKey(claimKey string) string {
	ok := len(claimKey) <= 255
	for i := 0; ok && i < len(claimKey); i++ {
		ok = claimKey[i] >= 0x20 && claimKey[i] < 0x7f
	}
	if ok {
		return claimKey
	}
	sum := sha256.Sum256([]byte(claimKey))
	return "sha256:" + hex.EncodeToString(sum[:])
}
