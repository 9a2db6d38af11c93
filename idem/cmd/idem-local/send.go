package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// send sends a message to a running stack's queue, for those without the
// AWS CLI.
func send(args []string) error {
	fs := flag.NewFlagSet("send", flag.ExitOnError)
	n := fs.Int("n", 1, "how many times to send the message")
	statePath := fs.String("state", "bin/local/stack.json", "the running stack's state file")
	queue := fs.String("queue", "", "the queue's logical id (default: the queue a function consumes)")
	key := fs.String("key", "", `the IdempotencyKey message attribute (default: the body's "id", if any)`)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: idem-local send [-n N] [-queue LogicalId] [-key KEY] BODY   (BODY - reads stdin)")
		fs.PrintDefaults()
	}
	_ = fs.Parse(args)
	if fs.NArg() != 1 {
		fs.Usage()
		os.Exit(2)
	}
	if *n < 1 {
		fmt.Fprintf(os.Stderr, "idem-local send: -n is %d; send the message at least once (-n 1 or more)\n", *n)
		os.Exit(2)
	}
	body := fs.Arg(0)
	if body == "-" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return err
		}
		body = string(b)
	}
	st, err := readState(*statePath)
	if err != nil {
		return err
	}
	url := ""
	switch {
	case *queue != "":
		url = st.Queues[*queue]
	case len(st.Polled) > 0:
		url = st.Polled[0]
	}
	if url == "" {
		return fmt.Errorf("no such queue in the running stack: %q", *queue)
	}
	if *key == "" {
		var msg struct {
			ID string `json:"id"`
		}
		if json.Unmarshal([]byte(body), &msg) == nil {
			*key = msg.ID
		}
	}
	client := sqs.New(sqs.Options{Region: st.Region, BaseEndpoint: aws.String(st.SQSEndpoint),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}
	if *key != "" {
		in.MessageAttributes = map[string]sqstypes.MessageAttributeValue{
			"IdempotencyKey": {DataType: aws.String("String"), StringValue: key},
		}
	}
	for range *n {
		out, err := client.SendMessage(context.Background(), in)
		if err != nil {
			return err
		}
		attr := fmt.Sprintf("IdempotencyKey %q", *key)
		if *key == "" {
			attr = "no IdempotencyKey attribute: the consumer's key function decides, the reference queue function by its messageId"
		}
		fmt.Printf("sent %s to %s (%s)\n", aws.ToString(out.MessageId), url, attr)
	}
	return nil
}
