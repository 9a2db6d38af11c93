// Package newuser tries the kit as a new user does, from outside: a new
// module that requires it (replaced by this checkout) holds the tests in
// testdata/consumer, an SQS consumer, a Stripe webhook and an EventBridge
// consumer built with idemtest, each delivering its message three times,
// and a consumer pointed at a misspelt table; every complete Go program in
// README.md builds and vets there too, and README.md's test files (a block
// opening with "// main_test.go") run beside its first program. It has no
// API: its test is the point.
package newuser
