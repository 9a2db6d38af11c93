package idem

// OutcomeOf is outcomeOf for the package's own tests: the outcome a
// delivery is logged and counted as.
var OutcomeOf = outcomeOf
