package kafkaconsumer_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/kafkaconsumer"
)

// TestNewRefusesBadWiring: New says what is wrong with its arguments
// instead of panicking, before any record is lost to it.
func TestNewRefusesBadWiring(t *testing.T) {
	e := idemtest.NewEnv(t)
	store := e.Store(t)
	h := func(context.Context, events.KafkaRecord) (idem.Effect, error) { return idem.Effect{}, nil }
	for _, tc := range []struct {
		name   string
		store  *idem.Store
		h      kafkaconsumer.Handler
		source string
		error  string // "" when New accepts
	}{
		{"nil store", nil, h, "", "nil Store"},
		{"nil handler", store, nil, "", "nil Handler"},
		{"JSONHandler(nil)", store, kafkaconsumer.JSONHandler[struct{}](nil), "", "nil Handler"},
		{"Source over 1,024 bytes", store, h, strings.Repeat("s", 1025), "Options.Source: Source is 1025 bytes"},
		{"Source with # as the scope", store, h, "billing#eu", `Options.Source: source "billing#eu" holds a "#"`},
		{"Source defaulted to the topic", store, h, "", ""},
		{"Source", store, h, "payments", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := kafkaconsumer.New(tc.store, tc.h, func(o *kafkaconsumer.Options) { o.Source = tc.source })
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
