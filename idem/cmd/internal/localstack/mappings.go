package localstack

// The event source mappings' pollers, made from the template's events.

import (
	"fmt"
	"strings"
)

// streamPoller makes the poller of a DynamoDB event, or nil when the event
// is disabled.
func (s *Stack) streamPoller(src StreamEventSource) (*StreamPoller, error) {
	var table *Table
	for _, t := range s.Tables {
		if t.StreamARN != "" && t.StreamARN == src.StreamARN {
			table = t
		}
	}
	if table == nil {
		return nil, fmt.Errorf("stream %s is not the stream of one of the template's tables", src.StreamARN)
	}
	if !src.Enabled {
		return nil, nil
	}
	var onFailure *Queue
	if src.OnFailure != "" {
		if onFailure = s.queueByARN(src.OnFailure); onFailure == nil {
			if strings.HasPrefix(src.OnFailure, "arn:aws:sqs:") {
				return nil, fmt.Errorf("on-failure queue %s is not one of the template's", src.OnFailure)
			}
			s.logf("%s: event %s: on-failure destination %s is not emulated locally: its records are logged and dropped", src.Function, src.Event, src.OnFailure)
		}
	}
	arn, _ := s.resources.Eval(map[string]any{"Fn::GetAtt": []any{src.Function, "Arn"}})
	return &StreamPoller{Source: src, Table: table, Endpoint: s.DynamoDBEndpoint, Region: s.Options.Region, Invoker: s,
		FunctionARN: scalarString(arn), SQS: s.sqs, OnFailure: onFailure, Logf: s.accessf}, nil
}

func (s *Stack) queueByARN(arn string) *Queue {
	for _, q := range s.Queues {
		if q.ARN == arn {
			return q
		}
	}
	return nil
}
