package idem

import (
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The UpdateItem calls of a lease. A pending claim is a claim record whose
// outcome is Pending, with the lease's end (LeaseUntil, epoch ms), its
// fencing token (Token), which each new lease increments, and its id
// (LeaseID), random per delivery, which its release and its commit name;
// the commit's Put replaces it with the processed record.

// newClaim claims id's key as pending until until, under leaseID, where
// no record holds it, or one that expired: an expired claim is absent in
// every mode, pending or not, as in Process. The token is added to the
// expired record's, so that it still grows. Its answer holds the new
// token.
func (s *Store) pendingClaim(k claimKey, now, until time.Time, leaseID string) *dynamodb.UpdateItemInput {
	a := s.opts.Attributes
	set := "SET #c = :c, #e = :e, #s = :s, #f = :f, #o = :pending, #l = :until, #i = :lease"
	remove := " REMOVE #r"
	names := map[string]string{"#k": a.Key, "#c": a.ClaimedAt, "#e": a.ExpiresAt, "#s": a.Source, "#f": a.Fingerprint,
		"#o": a.Outcome, "#l": a.LeaseUntil, "#t": a.Token, "#r": a.Response, "#d": a.PayloadDigest, "#i": a.LeaseID}
	values := map[string]types.AttributeValue{
		":c":       &types.AttributeValueMemberS{Value: now.UTC().Format(time.RFC3339Nano)},
		":e":       &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(s.opts.retention()).Unix(), 10)},
		":s":       &types.AttributeValueMemberS{Value: k.source},
		":f":       &types.AttributeValueMemberS{Value: k.fingerprint},
		":pending": &types.AttributeValueMemberS{Value: string(Pending)},
		":until":   millis(until),
		":lease":   &types.AttributeValueMemberS{Value: leaseID},
		":one":     &types.AttributeValueMemberN{Value: "1"},
		":now":     &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Unix(), 10)},
	}
	if k.digest != k.fingerprint {
		set += ", #d = :d"
		values[":d"] = &types.AttributeValueMemberS{Value: k.digest}
	} else {
		remove += ", #d" // an expired record's, if it had one
	}
	return &dynamodb.UpdateItemInput{
		TableName:                           &s.table,
		Key:                                 k.item,
		UpdateExpression:                    aws.String(set + " ADD #t :one" + remove),
		ConditionExpression:                 aws.String("attribute_not_exists(#k) OR #e < :now"),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueUpdatedNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// takeOverInput takes the lease of stored, a pending claim whose lease has
// ended, under leaseID, on the condition that nobody changed it since it
// was read.
func (s *Store) takeOverInput(stored Record, until time.Time, leaseID string) *dynamodb.UpdateItemInput {
	a := s.opts.Attributes
	return &dynamodb.UpdateItemInput{
		TableName:                &s.table,
		Key:                      s.keyItem(stored.Key),
		UpdateExpression:         aws.String("SET #l = :until, #i = :lease ADD #t :one"),
		ConditionExpression:      aws.String("#o = :pending AND #t = :token AND #l = :was"),
		ExpressionAttributeNames: map[string]string{"#o": a.Outcome, "#l": a.LeaseUntil, "#t": a.Token, "#i": a.LeaseID},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":until":   millis(until),
			":lease":   &types.AttributeValueMemberS{Value: leaseID},
			":one":     &types.AttributeValueMemberN{Value: "1"},
			":pending": &types.AttributeValueMemberS{Value: string(Pending)},
			":token":   &types.AttributeValueMemberN{Value: strconv.FormatInt(stored.Token, 10)},
			":was":     millis(stored.LeaseUntil),
		},
		ReturnValues:                        types.ReturnValueUpdatedNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// releaseInput ends the lease leaseID holds on key, if it still does.
func (s *Store) releaseInput(key, leaseID string) *dynamodb.UpdateItemInput {
	a := s.opts.Attributes
	return &dynamodb.UpdateItemInput{
		TableName:                &s.table,
		Key:                      s.keyItem(key),
		UpdateExpression:         aws.String("SET #l = :zero"),
		ConditionExpression:      aws.String("#o = :pending AND #i = :lease"),
		ExpressionAttributeNames: map[string]string{"#o": a.Outcome, "#l": a.LeaseUntil, "#i": a.LeaseID},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":zero":    &types.AttributeValueMemberN{Value: "0"},
			":pending": &types.AttributeValueMemberS{Value: string(Pending)},
			":lease":   &types.AttributeValueMemberS{Value: leaseID},
		},
	}
}
