package idem

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
)

// sendLog counts, through a middleware on each TransactWriteItems call,
// the requests that went out, the SDK's retries included. An error that
// is not DynamoDB's answer (a reset, a timeout, a response cut short or
// unreadable) may follow a commit only if a request went out.
type sendLog struct {
	attempts int  // calls made
	hooked   bool // the middleware was installed: the client is the SDK's
	sends    int  // requests handed to the HTTP client
}

// option installs the middleware; a client that ignores it (a fake)
// leaves hooked false, and every error of its is taken as maybe sent.
func (l *sendLog) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, l.install)
}

func (l *sendLog) install(stack *middleware.Stack) error {
	l.hooked = true
	// Last in the deserialize step: right before the HTTP request is sent.
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("idem.sendLog",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			l.sends++
			return next.HandleDeserialize(ctx, in)
		}), middleware.After)
}

// mayHaveSent: a request went out, or the client cannot tell.
func (l *sendLog) mayHaveSent() bool { return !l.hooked || l.sends > 0 }

// count is how many times the transaction was sent: the requests counted,
// or the calls made when the client cannot tell.
func (l *sendLog) count() int {
	if l.hooked {
		return l.sends
	}
	return l.attempts
}
