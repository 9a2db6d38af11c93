package idem_test

// Pure unit tests of how the kit reads DynamoDB's answers and retries: a
// scripted fake of TransactWriteItems stands in for the server here, since
// a real one cannot be made to conflict or throttle on demand. The claim
// logic itself is tested against the real endpoint in process_test.go.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemkit/kit/idem"
)

// scripted answers each call with the next error of its script (nil when
// the script is exhausted).
type scripted struct {
	errs   []error
	calls  int
	inputs []*dynamodb.TransactWriteItemsInput
}

func (s *scripted) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	s.calls++
	s.inputs = append(s.inputs, in)
	if len(s.errs) == 0 {
		return &dynamodb.TransactWriteItemsOutput{}, nil
	}
	err := s.errs[0]
	s.errs = s.errs[1:]
	return nil, err
}

func cancelled(codes ...string) error {
	var reasons []types.CancellationReason
	for _, c := range codes {
		reasons = append(reasons, types.CancellationReason{Code: aws.String(c), Message: aws.String(c + " message")})
	}
	return &types.TransactionCanceledException{Message: aws.String("cancelled"), CancellationReasons: reasons}
}

func noop(context.Context, idem.Message) (idem.Effect, error) {
	return idem.Effect{Writes: []types.TransactWriteItem{{ConditionCheck: &types.ConditionCheck{
		TableName: aws.String("t"), Key: map[string]types.AttributeValue{"k": &types.AttributeValueMemberS{Value: "v"}},
		ConditionExpression: aws.String("attribute_exists(k)"),
	}}}}, nil
}

func TestAnswersAndRetries(t *testing.T) {
	serverFault := &smithy.GenericAPIError{Code: "InternalServerError", Message: "boom", Fault: smithy.FaultServer}
	for _, tc := range []struct {
		name      string
		errs      []error
		deadline  time.Duration
		wantCalls int
		wantErr   error // matched with errors.Is; nil for success
		wantType  any
	}{
		{name: "conflict then commit", errs: []error{cancelled("TransactionConflict", "None"), cancelled("None", "ThrottlingError")}, wantCalls: 3},
		{name: "throttling outlives attempts", errs: []error{cancelled("ThrottlingError"), cancelled("None", "ThrottlingError"), cancelled("ThrottlingError")}, wantCalls: 3, wantErr: idem.ErrRetryable, wantType: new(*idem.RetryableError)},
		{name: "contention past MaxAttempts: sent again while there is time", errs: []error{cancelled("TransactionConflict"), cancelled("None", "TransactionConflict"), cancelled("TransactionConflict"), cancelled("TransactionConflict", "TransactionConflict"), cancelled("TransactionConflict")}, wantCalls: 6},
		{name: "contention and throttling: bounded as throttling", errs: []error{cancelled("TransactionConflict", "ThrottlingError"), cancelled("TransactionConflict", "ThrottlingError"), cancelled("ThrottlingError", "TransactionConflict")}, wantCalls: 3, wantErr: idem.ErrRetryable, wantType: new(*idem.RetryableError)},
		{name: "deadline too near to wait", errs: []error{cancelled("TransactionConflict")}, deadline: time.Microsecond, wantCalls: 1, wantErr: idem.ErrContended, wantType: new(*idem.ContendedError)},
		{name: "deadline within the reserve: contended at once", errs: []error{cancelled("None", "TransactionConflict"), cancelled("None", "TransactionConflict")}, deadline: 100 * time.Millisecond, wantCalls: 1, wantErr: idem.ErrRetryable, wantType: new(*idem.ContendedError)},
		{name: "SDK gave up retrying", errs: []error{&retry.MaxAttemptsError{Attempt: 3, Err: serverFault}}, wantCalls: 1, wantErr: idem.ErrRetryable},
		{name: "server fault", errs: []error{serverFault}, wantCalls: 1, wantErr: idem.ErrRetryable},
		{name: "validation by the server", errs: []error{cancelled("None", "ValidationError")}, wantCalls: 1, wantErr: idem.ErrInvalid, wantType: new(*idem.InvalidError)},
		{name: "validation exception", errs: []error{&smithy.GenericAPIError{Code: "ValidationException", Message: "bad"}}, wantCalls: 1, wantErr: idem.ErrInvalid},
		{name: "missing table", errs: []error{&types.ResourceNotFoundException{Message: aws.String("no table")}}, wantCalls: 1, wantErr: idem.ErrTableNotFound, wantType: new(*idem.TableNotFoundError)},
		{name: "effect rejected", errs: []error{cancelled("None", "ConditionalCheckFailed")}, wantCalls: 1, wantErr: idem.ErrRejected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &scripted{errs: tc.errs}
			store, err := idem.New(fake, "processed", func(o *idem.Options) {
				o.MaxAttempts, o.BackoffBase, o.BackoffMax = 3, time.Microsecond, time.Microsecond
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if tc.deadline > 0 {
				store, _ = idem.New(fake, "processed", func(o *idem.Options) { o.BackoffBase, o.BackoffMax = 24*time.Hour, 24*time.Hour })
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			_, err = store.Process(ctx, idem.Message{ID: "m", Source: "s"}, noop)
			if fake.calls != tc.wantCalls {
				t.Errorf("calls: want %d, got %d", tc.wantCalls, fake.calls)
			}
			switch {
			case tc.wantErr == nil && tc.wantType == nil && err != nil:
				t.Errorf("want success, got %v", err)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Errorf("want %v, got %v", tc.wantErr, err)
			}
			if tc.wantType != nil {
				if !errors.As(err, tc.wantType) {
					t.Errorf("want %T, got %T (%v)", tc.wantType, err, err)
				}
			}
		})
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	fake := &scripted{}
	for _, tc := range []struct {
		name   string
		client idem.TransactWriteAPI
		table  string
		opt    func(*idem.Options)
		want   string
	}{
		{"nil client", nil, "t", nil, "nil DynamoDB client"},
		{"no table", fake, "", nil, "empty processed-ids table name"},
		{"negative retention", fake, "t", func(o *idem.Options) { o.RetentionDays = -1 }, "RetentionDays is -1"},
		{"retention past time.Duration", fake, "t", func(o *idem.Options) { o.RetentionDays = 200000 }, "from 1 to 36500"},
		{"negative attempts", fake, "t", func(o *idem.Options) { o.MaxAttempts = -1 }, "must not be negative"},
		{"sort key too long", fake, "t", func(o *idem.Options) { o.Attributes.SortKey, o.SortKeyValue = "sk", string(make([]byte, 1025)) }, "SortKeyValue is 1025 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []func(*idem.Options)
			if tc.opt != nil {
				opts = append(opts, tc.opt)
			}
			_, err := idem.New(tc.client, tc.table, opts...)
			if err == nil || !contains(err.Error(), tc.want) {
				t.Errorf("want an error saying %q, got %v", tc.want, err)
			}
		})
	}
}

// TestDefaultsAreApplied: a Store with no options writes its claims
// under the documented attribute names, keeps them 30 days, sends a
// throttled transaction 5 times, and gives a sort key "IDEM".
func TestDefaultsAreApplied(t *testing.T) {
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	conflicts := make([]error, 6)
	for i := range conflicts {
		conflicts[i] = cancelled("ThrottlingError", "None")
	}
	fake := &scripted{errs: conflicts}
	store, err := idem.New(fake, "t", func(o *idem.Options) { o.Now = func() time.Time { return now }; o.BackoffMax = time.Microsecond })
	if err != nil {
		t.Fatal(err)
	}
	_, _ = store.Process(context.Background(), idem.Message{ID: "m", Source: "s"}, noop)
	if fake.calls != 5 {
		t.Errorf("MaxAttempts: want 5 sends, got %d", fake.calls)
	}
	item := fake.inputs[0].TransactItems[0].Put.Item
	for _, name := range []string{"pk", "expiresAt", "claimedAt", "source", "fingerprint", "outcome"} {
		if _, ok := item[name]; !ok {
			t.Errorf("the claim has no %q attribute: %v", name, item)
		}
	}
	if got := item["expiresAt"].(*types.AttributeValueMemberN).Value; got != fmt.Sprint(now.Add(30*24*time.Hour).Unix()) {
		t.Errorf("expiresAt: want 30 days on, got %s", got)
	}
	fake = &scripted{}
	single, _ := idem.New(fake, "t", func(o *idem.Options) { o.Attributes.SortKey = "sk" })
	_, _ = single.Process(context.Background(), idem.Message{ID: "m", Source: "s"}, noop)
	if got := fake.inputs[0].TransactItems[0].Put.Item["sk"].(*types.AttributeValueMemberS).Value; got != "IDEM" {
		t.Errorf("SortKeyValue default: want IDEM, got %q", got)
	}
}

// TestEachAttemptIsANewTransaction: the SDK writes its ClientRequestToken
// into the input it is given; resending that input after a cancellation
// would ask DynamoDB for the cancelled transaction's answer again.
func TestEachAttemptIsANewTransaction(t *testing.T) {
	fake := &scripted{errs: []error{cancelled("TransactionConflict", "None"), cancelled("TransactionConflict", "None")}}
	store, err := idem.New(fake, "processed", func(o *idem.Options) {
		o.BackoffBase, o.BackoffMax = time.Microsecond, time.Microsecond
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Process(context.Background(), idem.Message{ID: "m", Source: "s"}, noop); err != nil {
		t.Fatal(err)
	}
	seen := map[*dynamodb.TransactWriteItemsInput]bool{}
	for i, in := range fake.inputs {
		if seen[in] || in.ClientRequestToken != nil {
			t.Errorf("attempt %d reuses an input or carries a token: %v", i+1, aws.ToString(in.ClientRequestToken))
		}
		seen[in] = true
	}
	if len(fake.inputs) != 3 {
		t.Errorf("want 3 attempts, got %d", len(fake.inputs))
	}
}

// TestHugeBackoffDoesNotOverflow: a base so large that doubling it
// overflows must still wait at most BackoffMax.
func TestHugeBackoffDoesNotOverflow(t *testing.T) {
	fake := &scripted{errs: []error{cancelled("TransactionConflict"), cancelled("TransactionConflict")}}
	store, err := idem.New(fake, "processed", func(o *idem.Options) {
		o.BackoffBase, o.BackoffMax = time.Duration(1<<62), time.Microsecond
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Process(context.Background(), idem.Message{ID: "m", Source: "s"}, noop); err != nil {
		t.Fatalf("want a commit on the third attempt, got %v", err)
	}
}
