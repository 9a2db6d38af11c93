package localstack

// A table's CreateTableInput, read from its template properties.

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// tableInput reads a table's CreateTableInput from its template
// properties. It applies the key schema, attribute definitions, billing mode
// and throughput, indexes and stream; it returns the TTL attribute and
// whether point-in-time recovery is on, which take calls of their own.
// Encryption, tags, table class and deletion protection mean nothing
// locally and are left out.
func tableInput(typ string, props map[string]any) (in *dynamodb.CreateTableInput, ttl string, pitr bool, err error) {
	in = &dynamodb.CreateTableInput{}
	if name := scalarString(props["TableName"]); name != "" {
		in.TableName = aws.String(name)
	}
	if typ == typeSimpleTable {
		pk := mapOf(props["PrimaryKey"])
		name, kind := scalarString(pk["Name"]), scalarString(pk["Type"])
		if name == "" {
			name = "id"
		}
		attrType := map[string]ddbtypes.ScalarAttributeType{"": "S", "String": "S", "Number": "N", "Binary": "B"}[kind]
		if attrType == "" {
			return nil, "", false, fmt.Errorf("PrimaryKey.Type %q: want String, Number or Binary", kind)
		}
		in.AttributeDefinitions = []ddbtypes.AttributeDefinition{{AttributeName: aws.String(name), AttributeType: attrType}}
		in.KeySchema = []ddbtypes.KeySchemaElement{{AttributeName: aws.String(name), KeyType: ddbtypes.KeyTypeHash}}
		if pt, ok := props["ProvisionedThroughput"]; ok {
			in.BillingMode = ddbtypes.BillingModeProvisioned
			if in.ProvisionedThroughput, err = throughput(pt); err != nil {
				return nil, "", false, err
			}
		} else {
			in.BillingMode = ddbtypes.BillingModePayPerRequest
		}
		return in, "", false, nil
	}
	for _, a := range listOf(props["AttributeDefinitions"]) {
		am := mapOf(a)
		in.AttributeDefinitions = append(in.AttributeDefinitions, ddbtypes.AttributeDefinition{
			AttributeName: aws.String(scalarString(am["AttributeName"])),
			AttributeType: ddbtypes.ScalarAttributeType(scalarString(am["AttributeType"])),
		})
	}
	in.KeySchema = keySchema(props["KeySchema"])
	if len(in.KeySchema) == 0 {
		return nil, "", false, fmt.Errorf("KeySchema is missing")
	}
	// CloudFormation's default billing mode is PROVISIONED.
	in.BillingMode = ddbtypes.BillingModeProvisioned
	if bm := scalarString(props["BillingMode"]); bm != "" {
		in.BillingMode = ddbtypes.BillingMode(bm)
	}
	if in.BillingMode == ddbtypes.BillingModeProvisioned {
		if in.ProvisionedThroughput, err = throughput(props["ProvisionedThroughput"]); err != nil {
			return nil, "", false, err
		}
	}
	for _, g := range listOf(props["GlobalSecondaryIndexes"]) {
		gm := mapOf(g)
		gsi := ddbtypes.GlobalSecondaryIndex{
			IndexName:  aws.String(scalarString(gm["IndexName"])),
			KeySchema:  keySchema(gm["KeySchema"]),
			Projection: projection(gm["Projection"]),
		}
		if in.BillingMode == ddbtypes.BillingModeProvisioned {
			if gsi.ProvisionedThroughput, err = throughput(gm["ProvisionedThroughput"]); err != nil {
				return nil, "", false, fmt.Errorf("index %s: %w", *gsi.IndexName, err)
			}
		}
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, gsi)
	}
	for _, l := range listOf(props["LocalSecondaryIndexes"]) {
		lm := mapOf(l)
		in.LocalSecondaryIndexes = append(in.LocalSecondaryIndexes, ddbtypes.LocalSecondaryIndex{
			IndexName:  aws.String(scalarString(lm["IndexName"])),
			KeySchema:  keySchema(lm["KeySchema"]),
			Projection: projection(lm["Projection"]),
		})
	}
	if ss := mapOf(props["StreamSpecification"]); len(ss) > 0 {
		if scalarString(ss["StreamViewType"]) == "" {
			return nil, "", false, fmt.Errorf("StreamSpecification: StreamViewType is required")
		}
		in.StreamSpecification = &ddbtypes.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: ddbtypes.StreamViewType(scalarString(ss["StreamViewType"])),
		}
	}
	if t := mapOf(props["TimeToLiveSpecification"]); isTrue(t["Enabled"]) {
		ttl = scalarString(t["AttributeName"])
	}
	pitr = isTrue(mapOf(props["PointInTimeRecoverySpecification"])["PointInTimeRecoveryEnabled"])
	return in, ttl, pitr, nil
}

func keySchema(v any) []ddbtypes.KeySchemaElement {
	var ks []ddbtypes.KeySchemaElement
	for _, k := range listOf(v) {
		km := mapOf(k)
		ks = append(ks, ddbtypes.KeySchemaElement{
			AttributeName: aws.String(scalarString(km["AttributeName"])),
			KeyType:       ddbtypes.KeyType(scalarString(km["KeyType"])),
		})
	}
	return ks
}

func projection(v any) *ddbtypes.Projection {
	pm := mapOf(v)
	p := &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionType(scalarString(pm["ProjectionType"]))}
	for _, a := range listOf(pm["NonKeyAttributes"]) {
		p.NonKeyAttributes = append(p.NonKeyAttributes, scalarString(a))
	}
	return p
}

func throughput(v any) (*ddbtypes.ProvisionedThroughput, error) {
	m := mapOf(v)
	r, rok := number(m["ReadCapacityUnits"])
	w, wok := number(m["WriteCapacityUnits"])
	if !rok || !wok {
		return nil, fmt.Errorf("ProvisionedThroughput with ReadCapacityUnits and WriteCapacityUnits is required for PROVISIONED billing")
	}
	return &ddbtypes.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(int64(r)), WriteCapacityUnits: aws.Int64(int64(w))}, nil
}
