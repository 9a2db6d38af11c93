package sqsconsumer_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/idemkit/kit/idem/sqsconsumer"
)

func TestDefaultKeyOrder(t *testing.T) {
	attr := func(dataType string, v *string) map[string]events.SQSMessageAttribute {
		return map[string]events.SQSMessageAttribute{sqsconsumer.KeyAttribute: {DataType: dataType, StringValue: v}}
	}
	dedup := map[string]string{"MessageDeduplicationId": "dedup-1", "MessageGroupId": "g"}
	for _, tc := range []struct {
		name  string
		rec   events.SQSMessage
		want  string
		error string
	}{
		{"attribute first", events.SQSMessage{MessageId: "m", Attributes: dedup, MessageAttributes: attr("String", aws.String("evt_1"))}, "evt_1", ""},
		{"custom String type", events.SQSMessage{MessageId: "m", MessageAttributes: attr("String.uuid", aws.String("u-1"))}, "u-1", ""},
		{"deduplication id next, with its group", events.SQSMessage{MessageId: "m", Attributes: dedup}, "g/dedup-1", ""},
		{"messageId last", events.SQSMessage{MessageId: "m", Attributes: map[string]string{"SentTimestamp": "1"}}, "m", ""},
		{"other attributes ignored", events.SQSMessage{MessageId: "m", MessageAttributes: map[string]events.SQSMessageAttribute{"Key": {DataType: "String", StringValue: aws.String("x")}}}, "m", ""},
		{"number attribute", events.SQSMessage{MessageId: "m", MessageAttributes: attr("Number", aws.String("7"))}, "", `data type "Number"`},
		{"empty attribute", events.SQSMessage{MessageId: "m", MessageAttributes: attr("String", aws.String(""))}, "", "is empty"},
		{"attribute without value", events.SQSMessage{MessageId: "m", MessageAttributes: attr("String", nil)}, "", "is empty"},
		{"attribute of only spaces", events.SQSMessage{MessageId: "m", MessageAttributes: attr("String", aws.String("   "))}, "", "is empty"},
		{"attribute of only white space", events.SQSMessage{MessageId: "m", MessageAttributes: attr("String", aws.String(" \t\r\n"))}, "", "is empty"},
		{"nothing", events.SQSMessage{}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sqsconsumer.DefaultKey(tc.rec)
			if tc.error != "" {
				if err == nil || !contains(err.Error(), tc.error) {
					t.Fatalf("expect an error saying %q, got %q, %v", tc.error, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("expect %q, got %q, %v", tc.want, got, err)
			}
		})
	}
}

// TestDeduplicationKey: a FIFO key names the group and the id, and no two
// (group, id) pairs share one, whatever punctuation they hold (SQS allows
// any in both).
func TestDeduplicationKey(t *testing.T) {
	for _, tc := range []struct {
		name, group, id string
		want            string
	}{
		{"group and id", "acc-9", "evt_101", "acc-9/evt_101"},
		{"content-based id", "A", "3f7d", "A/3f7d"},
		{"a slash in the id", "A", "x/y", "A/x/y"},
		{"a slash in the group", "A/x", "y", "A%2Fx/y"},
		{"a percent sign in the group", "A%2Fx", "y", "A%252Fx/y"},
		{"no group", "", "evt_101", "/evt_101"},
		{"no id: no key", "A", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := events.SQSMessage{Attributes: map[string]string{"MessageGroupId": tc.group, "MessageDeduplicationId": tc.id}}
			if got, err := sqsconsumer.DeduplicationKey(rec); err != nil || got != tc.want {
				t.Fatalf("expect %q, got %q, %v", tc.want, got, err)
			}
		})
	}
	t.Run("the old key, for a queue-scoped queue", func(t *testing.T) {
		rec := events.SQSMessage{Attributes: map[string]string{"MessageGroupId": "acc-9", "MessageDeduplicationId": "evt_101"}}
		if got, err := sqsconsumer.QueueDeduplicationKey(rec); err != nil || got != "evt_101" {
			t.Fatalf("expect %q, got %q, %v", "evt_101", got, err)
		}
	})
}

func TestFirstKeyStopsAtAnError(t *testing.T) {
	bad := errors.New("bad")
	never := func(events.SQSMessage) (string, error) { t.Fatal("called after an error"); return "", nil }
	fn := sqsconsumer.FirstKey(
		func(events.SQSMessage) (string, error) { return "", nil },
		func(events.SQSMessage) (string, error) { return "", bad },
		never,
	)
	if _, err := fn(events.SQSMessage{}); !errors.Is(err, bad) {
		t.Fatalf("expect %v, got %v", bad, err)
	}
}

func TestQueueName(t *testing.T) {
	for arn, want := range map[string]string{
		"arn:aws:sqs:us-east-1:123456789012:credits":      "credits",
		"arn:aws:sqs:us-east-1:123456789012:credits.fifo": "credits.fifo",
		"credits": "credits",
		"":        "",
	} {
		if got := sqsconsumer.QueueName(arn); got != want {
			t.Errorf("QueueName(%q): expect %q, got %q", arn, want, got)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
