package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/idemkit/kit/idem/cmd/internal/localstack"
	"github.com/idemkit/kit/idem/internal/wire"
)

func runDemo(ctx context.Context, w io.Writer, s *localstack.Stack, secrets map[string]string, dir string, n int) error {
	ms, skipped, err := readEvents(dir)
	if err != nil {
		return err
	}
	for _, sk := range skipped {
		fmt.Fprintf(w, "demo: skipping %s\n", sk)
	}
	if len(ms) == 0 {
		fmt.Fprintf(w, "demo: no SQS or API Gateway v2 events in %s/: replaying built-in credits\n", dir)
		ms = builtIn()
	}
	accounts := ""
	if t, ok := s.Tables["AccountsTable"]; ok {
		accounts = t.Name
	}
	before, err := balances(ctx, s.DynamoDB(), accounts)
	if err != nil {
		return err
	}
	ledger := ledgerTable(s)
	ledgerBefore := 0
	if ledger != nil {
		if ledgerBefore, err = countItems(ctx, s.DynamoDB(), ledger.Name); err != nil {
			return err
		}
	}
	var queueURL, queueName string
	if p := entryPoller(s); p != nil {
		queueURL, queueName = p.Queue.URL, p.Queue.Name
	}
	// A record of a queue a function feeds (the ledger queue) is the
	// chain's to send: replayed, it would be an entry for no credit.
	chained := map[string]int{} // file and queue → records
	ms = slices.DeleteFunc(ms, func(m message) bool {
		q := queueOf(s, m.queue)
		if m.kind != "sqs" || q == nil || q.URL == queueURL {
			return false
		}
		chained[m.from+" for "+q.LogicalID]++
		return true
	})
	for _, k := range sortedKeys(chained) {
		fmt.Fprintf(w, "demo: skipping %d record(s) of %s, a queue the stack feeds itself\n", chained[k], k)
	}
	distinct := map[string]bool{}
	for _, m := range ms {
		distinct[m.kind+"/"+m.path+"/"+m.key] = true
	}
	fmt.Fprintf(w, "demo: %d message(s) (%d distinct keys), each delivered %d times\n", len(ms), len(distinct), n)
	for _, m := range ms {
		switch m.kind {
		case "http":
			sign(m, secrets, time.Now())
			codes := postN(ctx, s.APIURL, m, n)
			line := fmt.Sprintf("demo:   %-4s %-32s %s %s ×%d at once → %s", "HTTP", m.key, m.method, m.path, n, strings.Join(codes, " "))
			// A 409 is a delivery that raced the one holding the lease
			// (the functions call the receipts service under one): the
			// sender retries it, and now that the first is answered the
			// retry gets its answer again.
			if conflicts := countOf(codes, "409"); conflicts > 0 {
				again := postN(ctx, s.APIURL, m, conflicts)
				line += ", the 409s retried → " + strings.Join(again, " ")
			}
			fmt.Fprintf(w, "%s  (%s)\n", line, m.from)
		case "sqs":
			if queueURL == "" {
				fmt.Fprintf(w, "demo:   no queue is polled: skipping %s from %s\n", m.key, m.from)
				continue
			}
			if err := sendN(ctx, s.SQS(), queueURL, m, n); err != nil {
				return err
			}
			fmt.Fprintf(w, "demo:   %-4s %-32s sent ×%d at once to %s  (%s)\n", "SQS", m.key, n, queueName, m.from)
		}
	}
	if queueURL != "" && slices.ContainsFunc(ms, func(m message) bool { return m.kind == "sqs" }) {
		fmt.Fprintf(w, "demo: waiting for the queue to drain…\n")
		if err := drain(ctx, s.SQS(), queueURL, 2*time.Minute); err != nil {
			return err
		}
	}
	after, err := balances(ctx, s.DynamoDB(), accounts)
	if err != nil {
		return err
	}
	want := map[string]int64{}
	credits := map[string]int{} // account → distinct credits
	seen := map[string]bool{}
	for _, m := range ms {
		id := m.kind + "/" + m.path + "/" + m.key
		if m.account == "" || seen[id] {
			continue
		}
		seen[id] = true
		want[m.account] += m.cents
		credits[m.account]++
	}
	fmt.Fprintf(w, "\ndemo: balances in %s (each credit counted once):\n", accounts)
	fmt.Fprintf(w, "  %-12s %10s %10s %10s\n", "account", "before", "after", "expected")
	bad := 0
	names := slices.Collect(maps.Keys(after))
	for k := range want {
		if _, ok := after[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, acc := range names {
		exp := "?"
		mark := ""
		if c, ok := want[acc]; ok {
			exp = strconv.FormatInt(before[acc]+c, 10)
			if before[acc]+c == after[acc] {
				mark = "ok"
			} else {
				mark = "MISMATCH"
				bad++
			}
		}
		fmt.Fprintf(w, "  %-12s %10d %10d %10s  %s\n", acc, before[acc], after[acc], exp, mark)
	}
	printReceipts(ctx, w, s, accounts, credits, n)
	if t, ok := s.Tables["ProcessedTable"]; ok {
		// The claims share the table with the outbox items the credits wrote.
		out, err := s.DynamoDB().Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(t.Name), ConsistentRead: aws.Bool(true),
			ProjectionExpression: aws.String("#k"), ExpressionAttributeNames: map[string]string{"#k": wire.KindAttr}})
		if err == nil {
			outbox := 0
			for _, it := range out.Items {
				if k, ok := it[wire.KindAttr].(*ddbtypes.AttributeValueMemberS); ok && k.Value == wire.Kind {
					outbox++
				}
			}
			fmt.Fprintf(w, "demo: %d claim(s) and %d outbox item(s) in %s\n", len(out.Items)-outbox, outbox, t.Name)
		}
	}
	malformed := 0
	for _, m := range ms {
		if m.kind == "sqs" && m.account == "" {
			malformed += n
		}
	}
	for _, id := range sortedKeys(s.Queues) {
		q := s.Queues[id]
		if q.MaxReceiveCount() > 0 {
			continue
		}
		got, err := visible(ctx, s.SQS(), q.URL)
		if err != nil {
			continue
		}
		why := ""
		switch {
		case queueURL != "" && strings.Contains(s.Queues[logicalIDOf(s, queueURL)].Attributes["RedrivePolicy"], q.ARN):
			why = fmt.Sprintf(" (the %d copies of the messages that are no credit, after their last receive)", malformed)
		case slices.ContainsFunc(s.StreamPollers, func(p *localstack.StreamPoller) bool { return p.OnFailure == q }):
			why = " (the stream records the relay gave up on)"
		}
		fmt.Fprintf(w, "demo: %d message(s) in %s%s\n", got, q.Name, why)
	}
	applied := 0
	for _, c := range credits {
		applied += c
	}
	if ledger != nil && len(s.StreamPollers) > 0 {
		if !ledgerLine(ctx, w, s, ledger.Name, ledgerBefore, applied) {
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d balance(s) or ledger count(s) differ from one effect per message", bad)
	}
	if s.Traces != nil {
		// The chain's last spans arrive as the ledger's invokes end.
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		s.Traces.Wait(tctx, func([]localstack.Span) bool { return len(localstack.Services(s.Traces.Widest())) >= 3 })
		cancel()
		if tr := s.Traces.Widest(); len(tr) > 0 {
			fmt.Fprintf(w, "\ndemo: one message's trace (%s/traces/%s):\n%s\n", s.Traces.URL, tr[0].TraceID, localstack.Tree(tr))
		}
	}
	fmt.Fprintf(w, "demo: one effect per message\n")
	return nil
}

// postN delivers a webhook n times at once, as a sender's retries racing
// each other would.
func postN(ctx context.Context, base string, m message, n int) []string {
	codes := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, m.method, base+m.path, bytes.NewReader(m.body))
			if err != nil {
				codes[i] = "error"
				return
			}
			for k, v := range m.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				codes[i] = "error"
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = strconv.Itoa(resp.StatusCode)
		})
	}
	wg.Wait()
	return codes
}

// sendN sends a message's n copies to the queue at once, as a producer's
// retries racing each other would; the pollers then receive them in one
// batch or in several at once.
func sendN(ctx context.Context, client *sqs.Client, queueURL string, m message, n int) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			in := &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(string(m.body))}
			if len(m.attrs) > 0 {
				in.MessageAttributes = m.attrs
			}
			_, errs[i] = client.SendMessage(ctx, in)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func balances(ctx context.Context, client *dynamodb.Client, table string) (map[string]int64, error) {
	out := map[string]int64{}
	err := scanAccounts(ctx, client, table, "balance", func(account string, v ddbtypes.AttributeValue) {
		if n, ok := v.(*ddbtypes.AttributeValueMemberN); ok {
			out[account], _ = strconv.ParseInt(n.Value, 10, 64)
		}
	})
	return out, err
}

// scanAccounts calls fn with each account's attr, where it has one.
func scanAccounts(ctx context.Context, client *dynamodb.Client, table, attr string, fn func(account string, v ddbtypes.AttributeValue)) error {
	if table == "" {
		return nil
	}
	p := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String(table)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, item := range page.Items {
			acc, _ := item["account"].(*ddbtypes.AttributeValueMemberS)
			if v, ok := item[attr]; ok && acc != nil {
				fn(acc.Value, v)
			}
		}
	}
	return nil
}

// drain waits until the queue holds no message, visible or in flight.
func drain(ctx context.Context, client *sqs.Client, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(url),
			AttributeNames: []sqstypes.QueueAttributeName{
				sqstypes.QueueAttributeNameApproximateNumberOfMessages,
				sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
				sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
			},
		})
		if err != nil {
			return err
		}
		total := 0
		for _, v := range out.Attributes {
			n, _ := strconv.Atoi(v)
			total += n
		}
		if total == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the queue still holds %d message(s) after %v", total, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func visible(ctx context.Context, client *sqs.Client, url string) (int, error) {
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages},
	})
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
}

// logicalIDOf is the logical id of the stack's queue at url.
func logicalIDOf(s *localstack.Stack, url string) string {
	for id, q := range s.Queues {
		if q.URL == url {
			return id
		}
	}
	return ""
}

// queueOf is the stack's queue an SQS record's eventSourceARN names
// ("<stack>-<LogicalId>[-<suffix>]" in a deployed stack), or nil.
func queueOf(s *localstack.Stack, name string) *localstack.Queue {
	for id, q := range s.Queues {
		if name == q.Name || name == id || strings.HasSuffix(name, "-"+id) || strings.Contains(name, "-"+id+"-") {
			return q
		}
	}
	return nil
}
