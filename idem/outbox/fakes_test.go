package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// script is a fake service's answers, keyed by the outbox ids ("id-07")
// a call carries, since the relay's concurrent calls come in no fixed
// order; and its record of those calls, safe for them. Waits end with the
// call's context, so that a relay that never makes the awaited call fails
// its test instead of hanging it.
type script struct {
	failEntry map[string]bool   // the entry with this id is refused
	failCall  map[string]bool   // a call holding this id fails whole
	panicCall map[string]bool   // a call holding this id panics
	waitFor   map[string]string // a call holding this id returns only after the call holding that one did
	// hold, when not 0, keeps every call in flight until hold calls are,
	// or total calls were made, and then lets them go one at a time,
	// oldest first: a relay that kept fewer in flight would stall here
	// (until the guard's deadline), and one that started more finds the
	// others still held.
	hold, total int

	mu       sync.Mutex
	calls    []call // in the order they started
	inFlight map[int]call
	peak     int
	taken    map[string]bool          // the ids answered as sent
	overlaps []string                 // FIFO groups two calls in flight at once held
	done     map[string]chan struct{} // closed once the call holding that id returned
	turn     *sync.Cond               // on mu, for hold
}

// call is one call the fake took: its destination, the ids of its
// entries in order, the FIFO groups they belong to.
type call struct {
	n      int
	dest   string
	ids    []string
	groups []string
}

func newScript() *script {
	return &script{failEntry: map[string]bool{}, failCall: map[string]bool{}, panicCall: map[string]bool{}, waitFor: map[string]string{},
		inFlight: map[int]call{}, taken: map[string]bool{}, done: map[string]chan struct{}{}}
}

// doneCh is the channel closed once the call holding id returned; s.mu held.
func (s *script) doneCh(id string) chan struct{} {
	if s.done[id] == nil {
		s.done[id] = make(chan struct{})
	}
	return s.done[id]
}

// begin records a call starting, waits as scripted, and says how it
// fails: with an error, or not at all (entries may still be refused).
// end must follow, deferred, so that a panicking call ends too.
func (s *script) begin(ctx context.Context, c call) (call, error) {
	s.mu.Lock()
	c.n = len(s.calls)
	s.calls = append(s.calls, c)
	for _, other := range s.inFlight {
		for _, g := range c.groups {
			if slices.Contains(other.groups, g) {
				s.overlaps = append(s.overlaps, g+": "+strings.Join(other.ids, ",")+" and "+strings.Join(c.ids, ","))
			}
		}
	}
	s.inFlight[c.n] = c
	s.peak = max(s.peak, len(s.inFlight))
	if s.hold > 0 {
		s.waitTurn(ctx, c.n)
	}
	var waits []chan struct{}
	for _, id := range c.ids {
		if w, ok := s.waitFor[id]; ok {
			waits = append(waits, s.doneCh(w))
		}
	}
	s.mu.Unlock()

	for _, w := range waits {
		select {
		case <-w:
		case <-ctx.Done():
			return c, ctx.Err()
		}
	}
	for _, id := range c.ids {
		if s.panicCall[id] {
			panic("fake: scripted panic in the call holding " + id)
		}
		if s.failCall[id] {
			return c, errors.New("connection reset")
		}
	}
	return c, nil
}

// waitTurn waits, s.mu held, until call n may return under hold.
func (s *script) waitTurn(ctx context.Context, n int) {
	if s.turn == nil {
		s.turn = sync.NewCond(&s.mu)
	}
	s.turn.Broadcast()
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.turn.Broadcast()
	})
	defer stop()
	for ctx.Err() == nil && !((len(s.inFlight) >= s.hold || len(s.calls) == s.total) && n == slices.Min(slices.Collect(maps.Keys(s.inFlight)))) {
		s.turn.Wait()
	}
}

func (s *script) end(c call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inFlight, c.n)
	if s.turn != nil {
		s.turn.Broadcast()
	}
	for _, id := range c.ids {
		if ch := s.doneCh(id); !isClosed(ch) {
			close(ch)
		}
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// take records the fake took id.
func (s *script) take(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taken[id] = true
}

// sent is every id the fake took.
func (s *script) sent() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.taken)
}

// byStream is the calls in stream order (ids are zero-padded record
// numbers), whichever order they were made in.
func (s *script) byStream() []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	calls := slices.Clone(s.calls)
	slices.SortFunc(calls, func(a, b call) int { return strings.Compare(a.ids[0], b.ids[0]) })
	return calls
}

// fakeSQS answers SendMessageBatch as its script says and keeps each
// input.
type fakeSQS struct {
	*script
	inputs []*sqs.SendMessageBatchInput // under script.mu
}

func (f *fakeSQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	c := call{dest: aws.ToString(in.QueueUrl)}
	for _, e := range in.Entries {
		c.ids = append(c.ids, aws.ToString(e.MessageAttributes["IdempotencyKey"].StringValue))
		if e.MessageGroupId != nil {
			c.groups = append(c.groups, c.dest+" "+aws.ToString(e.MessageGroupId))
		}
	}
	f.mu.Lock()
	f.inputs = append(f.inputs, in)
	f.mu.Unlock()
	c, err := f.begin(ctx, c)
	defer f.end(c)
	if err != nil {
		return nil, err
	}
	out := &sqs.SendMessageBatchOutput{}
	for k, e := range in.Entries {
		if f.failEntry[c.ids[k]] {
			out.Failed = append(out.Failed, sqstypes.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), SenderFault: false})
			continue
		}
		out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String("m")})
		f.take(c.ids[k])
	}
	return out, nil
}

// fakeEvents answers PutEvents as its script says and keeps each input.
type fakeEvents struct {
	*script
	inputs []*eventbridge.PutEventsInput // under script.mu
}

func (f *fakeEvents) PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	c := call{dest: "eventbridge:" + aws.ToString(in.Entries[0].EventBusName)}
	for _, e := range in.Entries {
		var d struct {
			Key string `json:"idempotencyKey"`
		}
		_ = json.Unmarshal([]byte(aws.ToString(e.Detail)), &d)
		c.ids = append(c.ids, d.Key)
	}
	f.mu.Lock()
	f.inputs = append(f.inputs, in)
	f.mu.Unlock()
	c, err := f.begin(ctx, c)
	defer f.end(c)
	if err != nil {
		return nil, err
	}
	out := &eventbridge.PutEventsOutput{}
	for k := range in.Entries {
		if f.failEntry[c.ids[k]] {
			out.Entries = append(out.Entries, ebtypes.PutEventsResultEntry{ErrorCode: aws.String("ThrottlingException")})
			out.FailedEntryCount++
			continue
		}
		out.Entries = append(out.Entries, ebtypes.PutEventsResultEntry{EventId: aws.String(strconv.Itoa(k))})
		f.take(c.ids[k])
	}
	return out, nil
}
