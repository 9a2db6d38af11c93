package idem_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
)

type account struct {
	Account string `dynamodbav:"account"`
	Balance int64  `dynamodbav:"balance"`
	Owner   string `dynamodbav:"owner,omitempty"`
}

type accountKey struct {
	Account string `dynamodbav:"account"`
}

// TestWritesFromGoValues commits writes built with Put, Update, Delete and
// ConditionCheck against the local endpoint, and reads a rejection back
// into a Go value.
func TestWritesFromGoValues(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	balance := expression.Name("balance")
	apply := func(id string, w types.TransactWriteItem, err error) (idem.Result, error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: building the write: %v", id, err)
		}
		return e.store.Process(ctx, idem.Message{ID: id, Source: "writes"}, func(context.Context, idem.Message) (idem.Effect, error) {
			return idem.Effect{Writes: []types.TransactWriteItem{w}}, nil
		})
	}
	steps := []struct {
		name    string
		w       types.TransactWriteItem
		err     error
		want    int64 // acc-1's balance after the step; -1: the item is gone
		wantErr error
	}{}
	add := func(name string, w types.TransactWriteItem, err error, want int64, wantErr error) {
		steps = append(steps, struct {
			name    string
			w       types.TransactWriteItem
			err     error
			want    int64
			wantErr error
		}{name, w, err, want, wantErr})
	}
	w, err := idem.Put(e.accounts, account{Account: "acc-1", Balance: 100}, expression.AttributeNotExists(expression.Name("account")))
	add("put if absent", w, err, 100, nil)
	w, err = idem.Put(e.accounts, account{Account: "acc-1", Balance: 5}, expression.AttributeNotExists(expression.Name("account")))
	add("put if absent, present", w, err, 100, idem.ErrRejected)
	w, err = idem.Update(e.accounts, accountKey{"acc-1"}, expression.Add(balance, expression.Value(50)))
	add("update", w, err, 150, nil)
	w, err = idem.Update(e.accounts, accountKey{"acc-1"}, expression.Add(balance, expression.Value(-200)), expression.Name("balance").GreaterThanEqual(expression.Value(200)))
	add("update if covered, not covered", w, err, 150, idem.ErrRejected)
	w, err = idem.ConditionCheck(e.accounts, accountKey{"acc-1"}, expression.Name("balance").Equal(expression.Value(150)))
	add("condition check", w, err, 150, nil)
	w, err = idem.Delete(e.accounts, map[string]string{"account": "acc-1"}, expression.Name("balance").LessThan(expression.Value(100)))
	add("delete if low, not low", w, err, 150, idem.ErrRejected)
	w, err = idem.Delete(e.accounts, map[string]string{"account": "acc-1"})
	add("delete", w, err, -1, nil)
	for i, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			_, err := apply(string(rune('a'+i)), s.w, s.err)
			if !errors.Is(err, s.wantErr) {
				t.Fatalf("want %v, got %v", s.wantErr, err)
			}
			got := int64(-1)
			if n := e.balance(t, "acc-1"); n != 0 || s.want != -1 {
				got = int64(n)
			}
			if got != s.want {
				t.Errorf("balance: want %d, got %d", s.want, got)
			}
		})
	}
}

// TestRejectedItemDecodes: a write that asks for ALL_OLD hands its item to
// Effect.Rejected, where Decode reads it into a Go value.
func TestRejectedItemDecodes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	seed, err := idem.Put(e.accounts, account{Account: "acc-2", Balance: 30, Owner: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Process(ctx, idem.Message{ID: "seed", Source: "writes"}, func(context.Context, idem.Message) (idem.Effect, error) {
		return idem.Effect{Writes: []types.TransactWriteItem{seed}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	var seen account
	res, err := e.store.Process(ctx, idem.Message{ID: "debit", Source: "writes"}, func(context.Context, idem.Message) (idem.Effect, error) {
		w, err := idem.Update(e.accounts, accountKey{"acc-2"}, expression.Add(expression.Name("balance"), expression.Value(-50)),
			expression.Name("balance").GreaterThanEqual(expression.Value(50)))
		w.Update.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
		return idem.Effect{Writes: []types.TransactWriteItem{w}, Rejected: func(rej *idem.RejectedError) ([]byte, error) {
			if err := rej.Decode(&seen); err != nil {
				t.Error(err)
			}
			return []byte("insufficient funds"), nil
		}}, err
	})
	if err != nil || res.Outcome != idem.Rejected {
		t.Fatalf("want Rejected, got %v %v", res.Outcome, err)
	}
	if seen != (account{Account: "acc-2", Balance: 30, Owner: "ada"}) {
		t.Errorf("decoded %+v", seen)
	}
}

func TestWriteBuildErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"a key that is no map or struct", func() error { _, err := idem.Delete("t", 7); return err }, "Delete on t: the key is a int; want a map or a struct of the key attributes"},
		{"a string where the key belongs", func() error {
			_, err := idem.Update("t", "acc-1", expression.Add(expression.Name("balance"), expression.Value(1)))
			return err
		}, "Update on t: the key is a string; want a map or a struct of the key attributes"},
		{"a nil key", func() error {
			_, err := idem.ConditionCheck("t", nil, expression.AttributeExists(expression.Name("a")))
			return err
		}, "ConditionCheck on t: the key is nil; want a map"},
		{"a nil pointer key", func() error { _, err := idem.Delete("t", (*accountKey)(nil)); return err }, "the key is a nil *idem_test.accountKey; want a map"},
		{"an item that is no map or struct", func() error { _, err := idem.Put("t", []string{"a"}); return err }, "Put on t: the item is a []string; want a map or a struct of the item's attributes"},
		{"an empty key", func() error { _, err := idem.Delete("t", map[string]string{}); return err }, "Delete on t: the key has no attributes"},
		{"an empty update", func() error {
			_, err := idem.Update("t", accountKey{"a"}, expression.UpdateBuilder{})
			return err
		}, "idem: Update on t: the update is empty (a zero expression.UpdateBuilder)"},
		{"an empty condition", func() error {
			_, err := idem.Put("t", account{Account: "a"}, expression.ConditionBuilder{})
			return err
		}, "idem: Put on t: the condition is empty (a zero expression.ConditionBuilder)"},
		{"two conditions", func() error {
			c := expression.AttributeExists(expression.Name("a"))
			_, err := idem.Put("t", account{Account: "a"}, c, c)
			return err
		}, "expression.And"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.err(); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "unset parameter") {
				t.Errorf("want an error saying %q, got %v", tc.want, err)
			}
		})
	}
}
