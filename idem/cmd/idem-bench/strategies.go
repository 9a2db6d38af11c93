package main

import (
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// message is one credit.
type message struct {
	id, account string
	cents       int
	attempt     int // SQS's ApproximateReceiveCount, when set
}

// errAfterEffect is the failure injected after a strategy's effect: the
// handler errs, or the process dies, once the credit is applied.
var errAfterEffect = errors.New("failed after the effect")

// strategy delivers a message once. With failAfterEffect it fails right
// after applying the effect, as a crashing handler would.
type strategy interface {
	deliver(ctx context.Context, m message, failAfterEffect bool) error
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func creditUpdate(table string, m message) *types.Update {
	return &types.Update{
		TableName:                 aws.String(table),
		Key:                       map[string]types.AttributeValue{"account": s(m.account)},
		UpdateExpression:          aws.String("ADD balance :c"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":c": n(int64(m.cents))},
	}
}

// checkThenAct: GetItem, effect, PutItem: what the pattern replaces.
type checkThenAct struct {
	c                   *dynamodb.Client
	processed, accounts string
}

func (x *checkThenAct) deliver(ctx context.Context, m message, failAfterEffect bool) error {
	got, err := x.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(x.processed), Key: map[string]types.AttributeValue{"pk": s(m.id)}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return err
	}
	if got.Item != nil {
		return nil // duplicate
	}
	if _, err := x.c.UpdateItem(ctx, updateInput(creditUpdate(x.accounts, m))); err != nil {
		return err
	}
	if failAfterEffect {
		return errAfterEffect
	}
	_, err = x.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(x.processed), Item: map[string]types.AttributeValue{"pk": s(m.id)}})
	return err
}

// twoPhase: conditional PutItem IN_PROGRESS, effect, UpdateItem COMPLETED,
// DeleteItem on failure: the Powertools idempotency algorithm.
type twoPhase struct {
	c                   *dynamodb.Client
	processed, accounts string
	now                 func() time.Time
}

var errInProgress = errors.New("in progress")

func (x *twoPhase) deliver(ctx context.Context, m message, failAfterEffect bool) error {
	now := x.now()
	key := map[string]types.AttributeValue{"pk": s(m.id)}
	owner := rand.Text()
	_, err := x.c.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(x.processed),
		Item: map[string]types.AttributeValue{
			"pk": s(m.id), "status": s("INPROGRESS"), "owner": s(owner),
			"expiration":         n(now.Add(time.Hour).Unix()),
			"in_progress_expiry": n(now.Add(30 * time.Second).UnixMilli()),
		},
		ConditionExpression:      aws.String("attribute_not_exists(pk) OR expiration < :now OR (#s = :inprogress AND in_progress_expiry < :nowms)"),
		ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now": n(now.Unix()), ":nowms": n(now.UnixMilli()), ":inprogress": s("INPROGRESS"),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if st, ok := ccf.Item["status"].(*types.AttributeValueMemberS); ok && st.Value == "COMPLETED" {
			return nil // duplicate: the stored response is replayed
		}
		if o, ok := ccf.Item["owner"].(*types.AttributeValueMemberS); !ok || o.Value != owner {
			return errInProgress
		}
		// Its own record: an SDK resend of a PutItem whose first answer
		// was lost (a connection the loaded local server dropped) met
		// the write it had made. Powertools would report it in progress
		// until in_progress_expiry; the bench goes on, with no call more.
		err = nil
	}
	if err != nil {
		return err
	}
	_, err = x.c.UpdateItem(ctx, updateInput(creditUpdate(x.accounts, m)))
	if err == nil && failAfterEffect {
		err = errAfterEffect
	}
	if err != nil {
		_, _ = x.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(x.processed), Key: key})
		return err
	}
	_, err = x.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(x.processed), Key: key,
		UpdateExpression:          aws.String("SET #s = :done, #d = :resp"),
		ExpressionAttributeNames:  map[string]string{"#s": "status", "#d": "data"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":done": s("COMPLETED"), ":resp": s("ok")},
	})
	return err
}

// bare: one UpdateItem and no idempotency, the floor.
type bare struct {
	c        *dynamodb.Client
	accounts string
}

func (x *bare) deliver(ctx context.Context, m message, failAfterEffect bool) error {
	if _, err := x.c.UpdateItem(ctx, updateInput(creditUpdate(x.accounts, m))); err != nil {
		return err
	}
	if failAfterEffect {
		return errAfterEffect
	}
	return nil
}

func updateInput(u *types.Update) *dynamodb.UpdateItemInput {
	return &dynamodb.UpdateItemInput{
		TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression,
		ExpressionAttributeValues: u.ExpressionAttributeValues,
	}
}

// handTx: the kit's transaction (a conditional claim Put returning ALL_OLD,
// then the credit) built and sent by hand, without the kit's code: what
// separates the kit's latency from the local server's cost of a
// transaction.
type handTx struct {
	c                   *dynamodb.Client
	processed, accounts string
	now                 func() time.Time
}

func (x *handTx) deliver(ctx context.Context, m message, failAfterEffect bool) error {
	now := x.now()
	_, err := x.c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{
			TableName: aws.String(x.processed),
			Item: map[string]types.AttributeValue{
				"pk": s("bench#" + m.id), "expiresAt": n(now.Add(30 * 24 * time.Hour).Unix()),
				"claimedAt": s(now.UTC().Format(time.RFC3339Nano)), "source": s("bench"), "outcome": s("Processed"),
			},
			ConditionExpression:                 aws.String("attribute_not_exists(#k) OR #e < :now"),
			ExpressionAttributeNames:            map[string]string{"#k": "pk", "#e": "expiresAt"},
			ExpressionAttributeValues:           map[string]types.AttributeValue{":now": n(now.Unix())},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
		{Update: creditUpdate(x.accounts, m)},
	}})
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) && len(tce.CancellationReasons) > 0 && aws.ToString(tce.CancellationReasons[0].Code) == "ConditionalCheckFailed" {
		return nil // duplicate
	}
	if err == nil && failAfterEffect {
		return errAfterEffect
	}
	return err
}
