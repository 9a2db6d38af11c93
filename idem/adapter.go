package idem

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/internal/hook"
)

// What the kit's adapters reach of a Store that its users do not, through
// idem/internal/adapt: an unexported type, whose methods are no part of
// the public API.
type adapterHooks struct{}

func init() { hook.Idem = adapterHooks{} }

func (adapterHooks) CheckSource(s *Store, source string) error  { return s.checkSource(source) }
func (adapterHooks) CheckLease(s *Store, o LeaseOptions) error  { return s.checkLease(o) }
func (adapterHooks) Now(s *Store) time.Time                     { return s.opts.Now() }
func (adapterHooks) ClaimKey(s *Store, msg Message) string      { return s.claimKey(msg) }
func (adapterHooks) OutboxKey(s *Store, id string) string       { return s.outboxKey(id) }
func (adapterHooks) Tracing(ctx context.Context, s *Store) bool { return s.tracing(ctx) }

func (adapterHooks) Report(ctx context.Context, s *Store, o Outcome, msg Message, err error) {
	s.report(ctx, o, msg, err)
}

func (adapterHooks) Decode(s *Store, item map[string]types.AttributeValue) Record {
	return s.decodeRecord(item)
}
