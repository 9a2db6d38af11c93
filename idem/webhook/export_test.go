package webhook

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
)

// The package's own tests reach these, which users reach through a Mux's
// Handle (REST API events) or a preset (Stripe, GitHub).

func (r *Receiver) HandleV1(ctx context.Context, e events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	return r.handleV1(ctx, e, "")
}

func (m Mux) HandleV1(ctx context.Context, e events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	return m.handleV1(ctx, e)
}

var (
	StripeEventID     = stripeEventID
	GitHubDelivery    = gitHubDelivery
	StripeFingerprint = stripeFingerprint
	GitHubFingerprint = gitHubFingerprint
)

type FingerprintFunc = func(req Request) (string, error)
