package receipts

import "time"

// Options configure Start. Every default is written once, on its field, and
// applied in Start.
type Options struct {
	// KeyLifetime is how long a key is remembered after its receipt was
	// issued; a request with the key after that issues a new receipt.
	// Defaults to 24 hours, as Stripe keeps keys.
	KeyLifetime time.Duration

	// Now is the service's clock, for the key lifetime and the calls'
	// times. Defaults to time.Now.
	Now func() time.Time

	// Logf receives one line per call. Defaults to none.
	Logf func(format string, args ...any)
}

func (o *Options) setDefaults() {
	if o.KeyLifetime <= 0 {
		o.KeyLifetime = 24 * time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}
