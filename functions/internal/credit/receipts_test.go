package credit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/functions/internal/credit"
	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// service is a receipts service that deduplicates Idempotency-Key, or
// answers status when it is set, or hangs when hang is.
type service struct {
	mu       sync.Mutex
	receipts map[string]string
	bodies   []string
	keys     []string
	status   int
	hang     bool
}

func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ID      string `json:"id"`
		Account string `json:"account"`
		Cents   int64  `json:"cents"`
	}
	json.NewDecoder(r.Body).Decode(&body)
	s.mu.Lock()
	key := r.Header.Get("Idempotency-Key")
	s.keys = append(s.keys, key)
	s.bodies = append(s.bodies, fmt.Sprintf("%s %s %d", body.ID, body.Account, body.Cents))
	status, hang := s.status, s.hang
	receipt, seen := s.receipts[key]
	if !seen && status == 0 && !hang {
		receipt = fmt.Sprintf("rcpt_%d", len(s.receipts)+1)
		s.receipts[key] = receipt
	}
	s.mu.Unlock()
	switch {
	case hang:
		<-r.Context().Done()
	case status != 0:
		http.Error(w, `{"error":"down"}`, status)
	case seen:
		fmt.Fprintf(w, `{"receipt":%q}`, receipt)
	default:
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"receipt":%q}`, receipt)
	}
}

// TestApplyObtainsAReceipt: under a lease, each credit calls the service
// with the claim key and stores the receipt with the balance; a failing or
// hanging service commits nothing and the retry gets one receipt.
func TestApplyObtainsAReceipt(t *testing.T) {
	env := idemtest.NewEnv(t)
	svc := &service{receipts: map[string]string{}}
	srv := httptest.NewServer(svc)
	defer srv.Close()
	receipts := &credit.Receipts{URL: srv.URL, Client: &http.Client{Timeout: 200 * time.Millisecond}}
	store, err := idem.New(env.Client, env.Processed)
	if err != nil {
		t.Fatal(err)
	}
	c := credit.Credit{ID: "evt_001", Account: "acc-9", Cents: 500}
	msg := idem.Message{ID: "evt_001", Source: "credits", Payload: []byte(`{}`)}
	deliver := func() (idem.Result, error) {
		return store.ProcessLeased(context.Background(), msg, func(ctx context.Context, _ idem.Message) (idem.Effect, error) {
			w, err := credit.Apply(ctx, env.Accounts, c, receipts)
			return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
		}, func(o *idem.LeaseOptions) { *o = *receipts.Lease() })
	}
	for _, fault := range []string{"status", "hang"} {
		svc.mu.Lock()
		svc.status, svc.hang = map[string]int{"status": 503}[fault], fault == "hang"
		svc.mu.Unlock()
		if _, err := deliver(); err == nil || !strings.Contains(err.Error(), "receipts:") {
			t.Errorf("service %s: want the delivery failed by the receipts call, got %v", fault, err)
		}
		if n := idemtest.ItemCount(t, env.Client, env.Accounts); n != 0 {
			t.Errorf("service %s: want nothing committed, got %d accounts", fault, n)
		}
	}
	svc.mu.Lock()
	svc.status, svc.hang = 0, false
	svc.mu.Unlock()
	for range 2 {
		if _, err := deliver(); err != nil {
			t.Fatal(err)
		}
	}
	if env.Balance(t, "acc-9") != 500 || lastReceipt(t, env) != "rcpt_1" {
		t.Errorf("want balance 500 with lastReceipt rcpt_1, got %d, %q", env.Balance(t, "acc-9"), lastReceipt(t, env))
	}
	if len(svc.receipts) != 1 || svc.keys[len(svc.keys)-1] != "credits#evt_001" || svc.bodies[len(svc.bodies)-1] != "evt_001 acc-9 500" {
		t.Errorf("want one receipt, called with key credits#evt_001 and the credit; got %v, %v, %v", svc.receipts, svc.keys, svc.bodies)
	}
}

func lastReceipt(t *testing.T, env *idemtest.Env) string {
	t.Helper()
	out, err := env.Client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: &env.Accounts, Key: map[string]types.AttributeValue{"account": &types.AttributeValueMemberS{Value: "acc-9"}}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := out.Item["lastReceipt"].(*types.AttributeValueMemberS)
	if s == nil {
		return ""
	}
	return s.Value
}

func TestApplyNeedsALease(t *testing.T) {
	_, err := credit.Apply(context.Background(), "accounts", credit.Credit{Account: "a", Cents: 1}, &credit.Receipts{URL: "http://127.0.0.1:1"})
	if err == nil || !strings.Contains(err.Error(), "under a lease") {
		t.Errorf("want the missing lease named, got %v", err)
	}
}

func TestMain(m *testing.M) { idemtest.Main(m) }

func TestReceiptKey(t *testing.T) {
	long := strings.Repeat("k", 256)
	for _, tc := range []struct{ key, want string }{
		{"credits#evt_001", "credits#evt_001"},
		{strings.Repeat("k", 255), strings.Repeat("k", 255)},
		{"credits#evt\n1", "sha256:"},
		{"credits#évt", "sha256:"},
		{long, "sha256:"},
	} {
		got := credit.ReceiptKey(tc.key)
		if !strings.HasPrefix(got, tc.want) || (strings.HasPrefix(got, "sha256:") && (len(got) != 71 || got != credit.ReceiptKey(tc.key))) {
			t.Errorf("ReceiptKey(%q) = %q, want %q…", tc.key, got, tc.want)
		}
	}
}
