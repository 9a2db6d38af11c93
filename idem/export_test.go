package idem

import "github.com/idemkit/kit/idem/internal/seam"

// OutcomeOf is outcomeOf for the package's own tests: the outcome a
// delivery is logged and counted as.
var OutcomeOf = outcomeOf

// WithWait is seam.WithWait, which the kit's webhook adapter sets.
var WithWait = seam.WithWait
