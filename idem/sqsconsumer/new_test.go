package sqsconsumer_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// TestNewRefusesBadWiring: New says what is wrong with its arguments
// instead of panicking, and refuses a Source CloudWatch would drop or that
// would make keys ambiguous, before any record is lost to it.
func TestNewRefusesBadWiring(t *testing.T) {
	store, err := idem.New(acceptAll{}, "processed")
	if err != nil {
		t.Fatal(err)
	}
	scoped, err := idem.New(acceptAll{}, "processed", func(o *idem.Options) { o.Scope = "billing" })
	if err != nil {
		t.Fatal(err)
	}
	h := func(context.Context, events.SQSMessage) (idem.Effect, error) { return idem.Effect{}, nil }
	for _, tc := range []struct {
		name   string
		store  *idem.Store
		h      sqsconsumer.Handler
		source string
		error  string // "" when New accepts
	}{
		{"nil store", nil, h, "", "nil Store"},
		{"nil handler", store, nil, "", "nil Handler"},
		{"JSONHandler(nil)", store, sqsconsumer.JSONHandler[struct{}](nil), "", "nil Handler"},
		{"Source over 1,024 bytes", store, h, strings.Repeat("s", 1025), "Options.Source: Source is 1025 bytes"},
		{"Source all spaces", store, h, "   ", "Options.Source: Source is all spaces"},
		{"Source with a control character", store, h, "credits\n", "Options.Source"},
		{"Source with # as the scope", store, h, "billing#eu", `Options.Source: source "billing#eu" holds a "#"`},
		{"Source with # beside a Scope", scoped, h, "billing#eu", ""},
		{"Source defaulted to the queue's name", store, h, "", ""},
		{"Source", store, h, "credits", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sqsconsumer.New(tc.store, tc.h, func(o *sqsconsumer.Options) { o.Source = tc.source })
			if tc.error == "" {
				if err != nil || got == nil {
					t.Fatalf("expect a handler, got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.error) || got != nil {
				t.Fatalf("expect an error saying %q and no handler, got %v", tc.error, err)
			}
		})
	}
}
