package localdynamo_test

// A conformance test of the DynamoDB server the kit's tests run against.
// It runs against localdynamo by default and against any other server when
// AWS_ENDPOINT_URL_DYNAMODB is set (DynamoDB Local, real AWS), so results can
// be compared.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/idemtest"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int) types.AttributeValue    { return &types.AttributeValueMemberN{Value: strconv.Itoa(v)} }

// claimAndCredit is the kit's transaction in miniature: a conditional claim
// of id plus a credit of cents to account.
func claimAndCredit(processed, accounts, id, account string, cents int) *dynamodb.TransactWriteItemsInput {
	return &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{
			TableName:           aws.String(processed),
			Item:                map[string]types.AttributeValue{"pk": s(id)},
			ConditionExpression: aws.String("attribute_not_exists(pk)"),
		}},
		{Update: &types.Update{
			TableName:                 aws.String(accounts),
			Key:                       map[string]types.AttributeValue{"account": s(account)},
			UpdateExpression:          aws.String("ADD balance :c"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":c": n(cents)},
		}},
	}}
}

func isCancelled(err error) bool {
	var tce *types.TransactionCanceledException
	return errors.As(err, &tce)
}

func balance(t *testing.T, c *dynamodb.Client, table, account string) int {
	t.Helper()
	out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"account": s(account)},
	})
	if err != nil {
		t.Fatalf("get %s: %v", account, err)
	}
	v, ok := out.Item["balance"].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	b, _ := strconv.Atoi(v.Value)
	return b
}

// TestConcurrentClaimsKeepEveryCredit races 8 clients over 300 messages,
// each delivered 3 times in shuffled order. Stock moto_server keeps 299 of
// 300 credits here; DynamoDB keeps all of them.
func TestConcurrentClaimsKeepEveryCredit(t *testing.T) {
	const (
		clients    = 8
		messages   = 300
		deliveries = 3
		accounts   = 7
		rounds     = 3
	)
	c := idemtest.Client(idemtest.Endpoint(t))
	for round := range rounds {
		t.Run(fmt.Sprintf("round%d", round), func(t *testing.T) {
			processed := idemtest.CreateTable(t, c, idemtest.Table{Name: "processed", HashKey: "pk"})
			acct := idemtest.CreateTable(t, c, idemtest.Table{Name: "accounts", HashKey: "account"})
			var work []int
			for i := range messages {
				for range deliveries {
					work = append(work, i)
				}
			}
			rand.Shuffle(len(work), func(i, j int) { work[i], work[j] = work[j], work[i] })
			queue := make(chan int)
			var mu sync.Mutex
			var failures []error
			var wg sync.WaitGroup
			for range clients {
				wg.Go(func() {
					for i := range queue {
						in := claimAndCredit(processed, acct, fmt.Sprintf("msg-%d", i), fmt.Sprintf("acc-%d", i%accounts), i+1)
						for {
							_, err := c.TransactWriteItems(context.Background(), in)
							if err == nil || isCancelledByCondition(err) {
								break
							}
							if isCancelled(err) { // a conflict: DynamoDB asks us to retry
								continue
							}
							mu.Lock()
							failures = append(failures, err)
							mu.Unlock()
							break
						}
					}
				})
			}
			for _, i := range work {
				queue <- i
			}
			close(queue)
			wg.Wait()
			if len(failures) > 0 {
				t.Fatalf("%d transactions failed, first: %v", len(failures), failures[0])
			}
			want := make([]int, accounts)
			for i := range messages {
				want[i%accounts] += i + 1
			}
			for a := range accounts {
				if got := balance(t, c, acct, fmt.Sprintf("acc-%d", a)); got != want[a] {
					t.Errorf("acc-%d balance: want %d, got %d", a, want[a], got)
				}
			}
		})
	}
}

func isCancelledByCondition(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	for _, r := range tce.CancellationReasons {
		if aws.ToString(r.Code) == "ConditionalCheckFailed" {
			return true
		}
	}
	return false
}

// TestClientRequestTokenMakesACommitIdempotent: the SDK resends a commit
// whose answer was lost with the same token; DynamoDB answers success
// without applying it again.
func TestClientRequestTokenMakesACommitIdempotent(t *testing.T) {
	c := idemtest.Client(idemtest.Endpoint(t))
	processed := idemtest.CreateTable(t, c, idemtest.Table{Name: "processed", HashKey: "pk"})
	acct := idemtest.CreateTable(t, c, idemtest.Table{Name: "accounts", HashKey: "account"})
	ctx := context.Background()
	in := claimAndCredit(processed, acct, "tok-1", "acc-1", 7)
	// A token is at most 36 characters; DynamoDB keeps it ten minutes, so
	// each run needs its own.
	in.ClientRequestToken = aws.String(fmt.Sprintf("token-%016x", rand.Uint64()))
	// Binary and set values too: the server must fingerprint every type.
	in.TransactItems[0].Put.Item["response"] = &types.AttributeValueMemberB{Value: []byte("ok")}
	in.TransactItems[0].Put.Item["tags"] = &types.AttributeValueMemberBS{Value: [][]byte{[]byte("a"), []byte("b")}}
	for i := range 3 {
		if _, err := c.TransactWriteItems(ctx, in); err != nil {
			t.Fatalf("send %d with the same token: %v", i, err)
		}
	}
	if got := balance(t, c, acct, "acc-1"); got != 7 {
		t.Errorf("balance: want 7, got %d", got)
	}
	other := claimAndCredit(processed, acct, "tok-2", "acc-1", 9)
	other.ClientRequestToken = in.ClientRequestToken
	_, err := c.TransactWriteItems(ctx, other)
	var mismatch *types.IdempotentParameterMismatchException
	if !errors.As(err, &mismatch) {
		t.Errorf("same token, other parameters: want IdempotentParameterMismatchException, got %v", err)
	}
}
