// Package layout tests the repository's shape: three modules, each with
// what it is for. The library (the root module: idem and its packages)
// needs nothing of the tooling's or the tests' modules, as a user's module
// graph shows it; the reference functions (functions/) and the tooling
// (idem/cmd: commands, the local stack, the benchmarks, the test-only
// packages under internal/tests) are modules of their own. The local
// DynamoDB server is test support, under idem/idemtest/internal, apart
// from the runtime's internal packages (idem/internal), which the functions
// link and which never import it. Its tests are its whole content.
package layout
