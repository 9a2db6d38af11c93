package idem_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/webhook"
)

// TestLogsAndMetricsPerOutcome checks one EMF record and one log record per
// outcome, at the documented levels, with the source as the dimension.
func TestLogsAndMetricsPerOutcome(t *testing.T) {
	e := newEnv(t)
	var logs, metrics bytes.Buffer
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	store, err := idem.New(e.client, e.processed, func(o *idem.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		o.Observers = []idem.Observer{idemtest.EMF(t, &metrics)}
		o.Now = func() time.Time { return now }
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m := idem.Message{ID: "evt_9", Source: "stripe \"live\"", Payload: []byte("a"), LogAttrs: []slog.Attr{slog.String("messageId", "m-1")}}
	_, _ = store.Process(ctx, m, e.creditHandler(nil)) // Processed
	_, _ = store.Process(ctx, m, e.creditHandler(nil)) // Duplicate
	reused := m
	reused.Payload = []byte("b")
	_, _ = store.Process(ctx, reused, e.creditHandler(nil)) // KeyReuse
	_, _ = store.Process(ctx, idem.Message{ID: "x", Source: "stripe \"live\""}, func(context.Context, idem.Message) (idem.Effect, error) {
		return idem.Effect{}, errors.New("bad body")
	}) // Failed
	_, _ = store.Process(ctx, idem.Message{Source: "stripe \"live\""}, e.creditHandler(nil)) // Failed: no id

	want := []struct{ outcome, level string }{{"Processed", "DEBUG"}, {"Duplicate", "INFO"}, {"KeyReuse", "WARN"}, {"Failed", "WARN"}, {"Failed", "WARN"}}
	var emf []map[string]any
	for sc := bufio.NewScanner(&metrics); sc.Scan(); {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("EMF line %q is not JSON: %v", sc.Text(), err)
		}
		emf = append(emf, rec)
	}
	var logged []map[string]any
	for sc := bufio.NewScanner(&logs); sc.Scan(); {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		logged = append(logged, rec)
	}
	if len(emf) != len(want) || len(logged) != len(want) {
		t.Fatalf("want %d metric and log records, got %d and %d", len(want), len(emf), len(logged))
	}
	for i, w := range want {
		rec := emf[i]
		if rec[w.outcome] != 1.0 || rec["Source"] != "stripe \"live\"" {
			t.Errorf("metric %d: want %s=1 for the source, got %v", i, w.outcome, rec)
		}
		aws := rec["_aws"].(map[string]any)
		if aws["Timestamp"] != float64(now.UnixMilli()) {
			t.Errorf("metric %d: timestamp %v", i, aws["Timestamp"])
		}
		cwm := aws["CloudWatchMetrics"].([]any)[0].(map[string]any)
		if cwm["Namespace"] != "Idem" || cwm["Metrics"].([]any)[0].(map[string]any)["Name"] != w.outcome {
			t.Errorf("metric %d: directive %v", i, cwm)
		}
		if logged[i]["outcome"] != w.outcome || logged[i]["level"] != w.level {
			t.Errorf("log %d: want %s at %s, got %v", i, w.outcome, w.level, logged[i])
		}
	}
	if logged[2]["fingerprint"] != idem.Fingerprint([]byte("b")) || logged[2]["storedFingerprint"] != idem.Fingerprint([]byte("a")) {
		t.Errorf("key reuse log lacks both fingerprints: %v", logged[2])
	}
	if logged[1]["id"] != "evt_9" || logged[1]["source"] != "stripe \"live\"" || logged[1]["messageId"] != "m-1" {
		t.Errorf("duplicate log lacks id and source: %v", logged[1])
	}
}

func TestHandlerSeesItsMessage(t *testing.T) {
	e := newEnv(t)
	var gotMsg idem.Message
	_, err := e.store.Process(context.Background(), msg, func(ctx context.Context, m idem.Message) (idem.Effect, error) {
		gotMsg, _ = idem.FromContext(ctx)
		return idem.Effect{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if gotMsg.ID != msg.ID {
		t.Errorf("context: want id %s, got %q", msg.ID, gotMsg.ID)
	}
	if _, ok := idem.FromContext(context.Background()); ok {
		t.Error("a bare context claims to carry a message")
	}
}

func TestRefusalIsCountedApartFromFailure(t *testing.T) {
	var logs, metrics bytes.Buffer
	store, err := idem.New(&scripted{}, "processed", func(o *idem.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		o.Observers = []idem.Observer{idemtest.EMF(t, &metrics)}
	})
	if err != nil {
		t.Fatal(err)
	}
	// A delivery turned away by an adapter for its sender's fault: a webhook
	// without its signature.
	r, err := webhook.New(store, func(context.Context, webhook.Request) (webhook.Response, idem.Effect, error) {
		return webhook.Response{}, idem.Effect{}, nil
	}, func(o *webhook.Options) {
		o.Source, o.Verifier = "stripe", &webhook.HMACVerifier{Secrets: []string{"s"}}
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := r.HandleV2(context.Background(), events.APIGatewayV2HTTPRequest{Body: "{}"}); resp.StatusCode != 401 {
		t.Fatalf("want 401, got %d", resp.StatusCode)
	}
	var rec map[string]any
	if err := json.Unmarshal(metrics.Bytes(), &rec); err != nil || rec["Refused"] != 1.0 || rec["Failed"] != nil {
		t.Errorf("want one Refused metric and no Failed, got %s (%v)", metrics.String(), err)
	}
	var line map[string]any
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil || line["level"] != "INFO" || line["outcome"] != "Refused" || line["key"] != "" {
		t.Errorf("want an INFO Refused log without a key, got %s (%v)", logs.String(), err)
	}
}

type recorder struct{ got []idem.Observation }

func (r *recorder) Observe(_ context.Context, o idem.Observation) { r.got = append(r.got, o) }

type panicky struct{}

func (panicky) Observe(context.Context, idem.Observation) { panic("observer down") }

// TestObserversHearEachOutcomeOnce: every Observer is told once per
// delivery, with its key, result or error; one that panics is logged and
// changes no outcome.
func TestObserversHearEachOutcomeOnce(t *testing.T) {
	e := newEnv(t)
	var logs bytes.Buffer
	rec := &recorder{}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	store, err := idem.New(e.client, e.processed, func(o *idem.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		o.Observers = []idem.Observer{panicky{}, rec}
		o.Now = func() time.Time { return now }
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m := idem.Message{ID: "evt_o", Source: "observed", Payload: []byte("a")}
	for range 2 {
		if _, err := store.Process(ctx, m, e.creditHandler(nil)); err != nil {
			t.Fatalf("an Observer's panic changed the outcome: %v", err)
		}
	}
	_, _ = store.Process(ctx, idem.Message{Source: "observed"}, e.creditHandler(nil)) // no id: Failed
	want := []idem.Outcome{idem.Processed, idem.Duplicate, idem.Failed}
	if len(rec.got) != len(want) {
		t.Fatalf("want %d observations, got %d", len(want), len(rec.got))
	}
	for i, o := range rec.got {
		if o.Outcome != want[i] || !o.Time.Equal(now) || o.Message.Source != "observed" {
			t.Errorf("observation %d: want %s at %v, got %+v", i, want[i], now, o)
		}
	}
	if rec.got[1].Key != "observed#evt_o" || string(rec.got[1].Result.Record.Response) != "credited evt_o" || rec.got[2].Err == nil {
		t.Errorf("observations lack their key, result or error: %+v", rec.got)
	}
	if n := strings.Count(logs.String(), "an Observer panicked"); n != 3 {
		t.Errorf("want the panicking Observer logged 3 times, got %d", n)
	}
}
