package localstack

import (
	"fmt"

	"github.com/idemkit/kit/idem/cmd/internal/receipts"
)

// receiptsEnv names the receipts service a function calls before its
// writes; empty, the function calls none.
const receiptsEnv = "RECEIPTS_URL"

// wantsReceipts tells whether a function gets the stack's receipts
// service: it declares RECEIPTS_URL, and neither the template (a parameter
// given a URL) nor Options.Env sets a value, which the user chose over
// ours.
func (s *Stack) wantsReceipts(spec *FunctionSpec) bool {
	v, declared := spec.Env[receiptsEnv]
	_, overridden := s.Options.Env[receiptsEnv]
	return declared && v == "" && !overridden
}

// startReceipts starts the receipts service when some function wants it.
// It runs in this process: its calls are for tests to read (Stack.Receipts).
func (s *Stack) startReceipts() error {
	if s.Options.NoReceipts {
		return nil
	}
	var wanted []string
	for _, id := range sortedKeys(s.Specs) {
		if s.wantsReceipts(s.Specs[id]) {
			wanted = append(wanted, id)
		}
	}
	if len(wanted) == 0 {
		return nil
	}
	srv, err := receipts.Start(s.Options.ReceiptsAddr, func(o *receipts.Options) { o.Logf = s.accessf })
	if err != nil {
		return fmt.Errorf("localstack: the receipts service on %s (Options.ReceiptsAddr): %w", s.Options.ReceiptsAddr, err)
	}
	s.Receipts = srv
	s.logf("receipts service (idem/cmd/internal/receipts) on %s for %v, admin %s", srv.URL(), wanted, srv.AdminURL())
	return nil
}
