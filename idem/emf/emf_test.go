package emf_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/emf"
)

// TestOneLinePerOutcome: each outcome a Store reports is one EMF record,
// counted under its Source, in the namespace, at the Store's time.
func TestOneLinePerOutcome(t *testing.T) {
	var buf bytes.Buffer
	w, err := emf.New(&buf, func(o *emf.Options) { o.Namespace = "Payments" })
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	ctx := context.Background()
	for _, ob := range []idem.Observation{
		{Outcome: idem.Processed, Message: idem.Message{Source: `stripe "live"`}, Time: now},
		{Outcome: idem.Duplicate, Message: idem.Message{Source: "credits"}, Time: now},
		{Outcome: idem.Failed, Err: errors.New("no key"), Time: now},
	} {
		w.Observe(ctx, ob)
	}
	want := []struct{ outcome, source string }{{"Processed", `stripe "live"`}, {"Duplicate", "credits"}, {"Failed", "unknown"}}
	i := 0
	for sc := bufio.NewScanner(&buf); sc.Scan(); i++ {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		if i >= len(want) {
			t.Fatalf("more lines than outcomes: %s", sc.Text())
		}
		if rec[want[i].outcome] != 1.0 || rec["Source"] != want[i].source {
			t.Errorf("line %d: want %s=1 for %q, got %v", i, want[i].outcome, want[i].source, rec)
		}
		aws := rec["_aws"].(map[string]any)
		cwm := aws["CloudWatchMetrics"].([]any)[0].(map[string]any)
		if aws["Timestamp"] != float64(now.UnixMilli()) || cwm["Namespace"] != "Payments" ||
			cwm["Metrics"].([]any)[0].(map[string]any)["Name"] != want[i].outcome {
			t.Errorf("line %d: directive %v", i, aws)
		}
	}
	if i != len(want) {
		t.Errorf("want %d lines, got %d", len(want), i)
	}
}

func TestNewRefusesWhatCloudWatchRefuses(t *testing.T) {
	for _, tc := range []struct{ name, namespace, want string }{
		{"blank", "   ", "all spaces"},
		{"too long", strings.Repeat("n", 256), "CloudWatch allows 255"},
		{"AWS/ prefix", "AWS/Lambda", "AWS/"},
		{"colon first", ":idem", `":"`},
		{"control character", "Idem\n", "control or non-ASCII"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := emf.New(&bytes.Buffer{}, func(o *emf.Options) { o.Namespace = tc.namespace })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("want an error saying %q, got %v", tc.want, err)
			}
		})
	}
	if _, err := emf.New(nil); err == nil {
		t.Error("a nil writer: want an error")
	}
}

// TestTableNotFoundNamesTheTable: a missing table's line counts
// TableNotFound and carries the table and the Region as properties, not
// dimensions, so the alarm's metric stays one per Source.
func TestTableNotFoundNamesTheTable(t *testing.T) {
	var buf bytes.Buffer
	w, err := emf.New(&buf)
	if err != nil {
		t.Fatal(err)
	}
	w.Observe(context.Background(), idem.Observation{Outcome: idem.TableNotFound, Message: idem.Message{Source: "credits"},
		Err: &idem.TableNotFoundError{Key: "credits#evt-1", Tables: []string{"procesed-ids"}, Claims: true, Region: "us-east-1"}})
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("%q is not JSON: %v", buf.String(), err)
	}
	cwm := rec["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
	if rec["TableNotFound"] != 1.0 || rec["Table"] != "procesed-ids" || rec["Region"] != "us-east-1" ||
		len(cwm["Dimensions"].([]any)) != 1 || cwm["Metrics"].([]any)[0].(map[string]any)["Name"] != "TableNotFound" {
		t.Errorf("want TableNotFound=1 with Table and Region, dimension Source alone; got %s", buf.String())
	}
}
