package idemtest

import (
	"context"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
)

// CallCounter counts DynamoDB calls by operation name. Add it to a client
// with its Option; each call counts once, however often the SDK retries it.
type CallCounter struct {
	mu    sync.Mutex
	calls map[string]int
}

// Option installs the counter on a client.
func (c *CallCounter) Option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("idemtest.CallCounter",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				c.mu.Lock()
				if c.calls == nil {
					c.calls = map[string]int{}
				}
				c.calls[awsmiddleware.GetOperationName(ctx)]++
				c.mu.Unlock()
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	})
}

// Count is how many calls of operation (such as "TransactWriteItems") were
// made; "" counts every operation.
func (c *CallCounter) Count(operation string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if operation != "" {
		return c.calls[operation]
	}
	n := 0
	for _, v := range c.calls {
		n += v
	}
	return n
}

// Reset sets every count to zero.
func (c *CallCounter) Reset() {
	c.mu.Lock()
	c.calls = nil
	c.mu.Unlock()
}
