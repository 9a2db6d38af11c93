# One Makefile for people, CI and `sam build` (BuildMethod: makefile).
GO     ?= go
PYTHON ?= python3
# cfn-lint through the same Python, whether or not its script is on PATH.
CFN_LINT ?= $(PYTHON) -c 'import sys; from cfnlint.runner import main; sys.exit(main())'

# `sam build` runs build-<LogicalId> with ARTIFACTS_DIR set and expects
# $(ARTIFACTS_DIR)/bootstrap, built for the functions' Architectures (arm64).
# `make local` runs the same targets with LAMBDA_GOOS/LAMBDA_GOARCH set to
# this machine's, so a function is built one way only.
LAMBDA_GOOS   ?= linux
LAMBDA_GOARCH ?= arm64
# -s -w drop the symbol table and DWARF: a third of the binary, and of its cold start.
# The functions are a module of their own (functions/go.mod): built from there.
LAMBDA_BUILD   = CGO_ENABLED=0 GOOS=$(LAMBDA_GOOS) GOARCH=$(LAMBDA_GOARCH) $(GO) build -C functions -tags lambda.norpc -trimpath -ldflags='-s -w'

# The repository's modules: the library (the root), the reference functions
# and the tooling (idem/cmd), each with its own go.mod, so that a user of
# the library gets none of the others' requirements.
MODULES = . functions idem/cmd

# Flags for `make local` / `make demo`, e.g. LOCAL_FLAGS='-api-addr 127.0.0.1:3001 -instances 4',
# or LOCAL_FLAGS='-max-concurrency 8': each function as on Lambda Managed
# Instances, 8 invokes at once in one process (Linux, as root).
LOCAL_FLAGS ?=

.PHONY: test chaos bench fuzz moto tools lint-template local demo build-QueueFunction build-ManagedQueueFunction build-WebhookFunction build-ManagedWebhookFunction build-LedgerFunction build-RelayFunction

# The Managed* functions are the same functions on Lambda Managed Instances
# (template.yaml, UseManagedInstances): the same build.
build-QueueFunction build-ManagedQueueFunction:
	$(if $(ARTIFACTS_DIR),,$(error ARTIFACTS_DIR is not set: sam build sets it, or run make $@ ARTIFACTS_DIR=out))
	$(LAMBDA_BUILD) -o $(abspath $(ARTIFACTS_DIR))/bootstrap ./queue

build-WebhookFunction build-ManagedWebhookFunction:
	$(if $(ARTIFACTS_DIR),,$(error ARTIFACTS_DIR is not set: sam build sets it, or run make $@ ARTIFACTS_DIR=out))
	$(LAMBDA_BUILD) -o $(abspath $(ARTIFACTS_DIR))/bootstrap ./webhook

build-LedgerFunction:
	$(if $(ARTIFACTS_DIR),,$(error ARTIFACTS_DIR is not set: sam build sets it, or run make build-LedgerFunction ARTIFACTS_DIR=out))
	$(LAMBDA_BUILD) -o $(abspath $(ARTIFACTS_DIR))/bootstrap ./ledger

build-RelayFunction:
	$(if $(ARTIFACTS_DIR),,$(error ARTIFACTS_DIR is not set: sam build sets it, or run make build-RelayFunction ARTIFACTS_DIR=out))
	$(LAMBDA_BUILD) -o $(abspath $(ARTIFACTS_DIR))/bootstrap ./relay

# moto is the local DynamoDB- and SQS-compatible server the tests run against
# (through idem/idemtest/internal/localdynamo). Installed when missing.
moto:
	@$(PYTHON) -c 'import moto, flask, werkzeug' 2>/dev/null || \
	  $(PYTHON) -m pip install 'moto[server]' || \
	  { echo "make: could not install moto; install Python 3 and run: pip install 'moto[server]'" >&2; exit 1; }

# cfn-lint and aws-sam-translator check template.yaml. Installed when missing.
tools: moto
	@$(PYTHON) -c 'import cfnlint, samtranslator' 2>/dev/null || \
	  $(PYTHON) -m pip install cfn-lint aws-sam-translator || \
	  { echo "make: could not install the template checkers; run: pip install cfn-lint aws-sam-translator" >&2; exit 1; }

# The template as CloudFormation will see it: cfn-lint's rules, then the SAM
# transform itself (.ci/sam_translate.py, what `sam deploy` has run remotely).
lint-template: tools
	$(CFN_LINT) template.yaml
	$(PYTHON) .ci/sam_translate.py template.yaml >/dev/null
	@echo "template.yaml: cfn-lint clean, SAM transform ok"

# staticcheck's default checks, pinned, fetched by go run (no tool line in
# go.mod: a user's module graph gets nothing of it).
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

# go test through gotest (idem/cmd/internal/testphase): go test's own
# lines, and the long tests' phase lines as they run, which plain go test
# ./... shows only with -v, all of every package's log, once each package
# has ended; the three modules' tests at once, the chaos suite, the
# longest package, started first beside its module's others; last the ten
# slowest packages and tests (every test's time and log: bin/test.json,
# go test -json's lines). vet, staticcheck and the template's checks run
# meanwhile, their output after the tests': the tests mostly wait on
# their servers, and the checks fit in there. Every step runs whatever
# another's result, and the last line says what passed or what failed.
# The chaos soaks run here at sizes that meet every fault they inject;
# make chaos runs them at the sizes the README's figures come from.
test: moto tools
	@mkdir -p bin; failed=""; \
	$(GO) build -C idem/cmd -o $(CURDIR)/bin/gotest ./internal/testphase/gotest || failed="$$failed gotest"; \
	echo 'go vet, staticcheck and the template'"'"'s checks beside the tests (their output after the tests'"'"')'; \
	( for m in $(MODULES); do echo "$(GO) vet ./... (in $$m)"; $(GO) -C $$m vet ./... || echo "make test: failed: vet($$m)"; done; \
	  for m in $(MODULES); do echo "$(STATICCHECK) ./... (in $$m)"; (cd $$m && $(STATICCHECK) ./...) || echo "make test: failed: staticcheck($$m)"; done; \
	  $(MAKE) --no-print-directory lint-template || echo "make test: failed: template.yaml" ) > bin/checks.out 2>&1 & checks=$$!; \
	bin/gotest -go $(GO) $(foreach m,$(MODULES),-C $(m)) -first idem/cmd/internal/tests/chaos -events bin/test.json -race -count=1 ./... || failed="$$failed tests"; \
	wait $$checks; cat bin/checks.out; \
	failed="$$failed$$(sed -n 's/^make test: failed: / /p' bin/checks.out | tr -d '\n')"; \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed"; exit 1; fi; \
	echo "make test: passed: vet, staticcheck and the tests of the library, the functions and the tooling, template.yaml's checks"

# The chaos soaks at the sizes whose figures the README and
# idem/cmd/internal/tests/chaos/doc.go cite, each printing its figures
# (the lines that name the seed): TestChaosReplay 2,000 messages,
# TestChaosLease 400, TestChaosOutbox 2,000 credits, TestChaosAggregate
# 1,200. About 3 minutes on 2 cores. CHAOS_FLAGS adds to them,
# e.g. CHAOS_FLAGS='-chaos.seed 2'.
CHAOS_FLAGS ?=
chaos: moto
	$(GO) test -C idem/cmd -race -count=1 -v -run '^TestChaos(Replay|Lease|Outbox|Aggregate)$$' ./internal/tests/chaos \
	  -chaos.messages 2000 -chaos.leasemessages 400 -chaos.outboxcredits 2000 -chaos.aggregatecredits 1200 $(CHAOS_FLAGS)

# Each fuzz target for a bounded time (FUZZTIME each); their seed corpora
# (testdata/fuzz) already run in make test.
FUZZTIME ?= 20s
fuzz:
	$(GO) test -C functions -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./internal/credit
	$(GO) test -C functions -run '^$$' -fuzz '^FuzzRecord$$' -fuzztime $(FUZZTIME) ./queue/internal/handler
	$(GO) test -run '^$$' -fuzz '^FuzzKey$$' -fuzztime $(FUZZTIME) ./idem/sqsconsumer
	$(GO) test -run '^$$' -fuzz '^FuzzBatch$$' -fuzztime $(FUZZTIME) ./idem/sqsconsumer
	$(GO) test -run '^$$' -fuzz '^FuzzKey$$' -fuzztime $(FUZZTIME) ./idem/kafkaconsumer
	$(GO) test -run '^$$' -fuzz '^FuzzRequest$$' -fuzztime $(FUZZTIME) ./idem/webhook
	$(GO) test -run '^$$' -fuzz '^FuzzStripeVerifier$$' -fuzztime $(FUZZTIME) ./idem/webhook
	$(GO) test -run '^$$' -fuzz '^FuzzHMACVerifier$$' -fuzztime $(FUZZTIME) ./idem/webhook
	$(GO) test -run '^$$' -fuzz '^FuzzIdempotencyKey$$' -fuzztime $(FUZZTIME) ./idem/webhook
	$(GO) test -run '^$$' -fuzz '^FuzzTopFields$$' -fuzztime $(FUZZTIME) ./idem/webhook
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./idem/internal/tracectx

# Every strategy side by side on one local DynamoDB (this kit per record, with
# its claim cache and in batch mode, check-then-act, the two-phase lock, a bare
# UpdateItem, and Powertools for TypeScript itself when node is there), the
# lease mode beside the one-transaction mode, the outbox (a message's cost,
# the relay's throughput, a credit's way to the ledger on the local stack),
# four streams of duplicates (rare, an SQS storm counted and not, every
# message twice through Store.Process) through this kit, the Go two-phase
# lock and Powertools, with the ReadFirstAbove sweep and what a message
# costs per stream, 8 deliveries of one key at once in one process,
# hot items (1, 8 and 64 environments crediting one account and ten through
# this kit's paths, the Go two-phase lock and Powertools, on the latency
# model with its conflict model and a partition's write limit), the kit's
# CPU cost and the functions' cold starts, in one run: prints the
# tables, writes them to idem/cmd/idem-bench/RESULTS.md and the Go
# benchmarks' raw output (benchstat's input) to
# idem/cmd/idem-bench/bench.txt. About 26 minutes on 2 shared cores (the
# streams, the sweep and coalescing about 13 of them), and the hot items
# about 5 more (estimated from runs of -hot 40; -hot sets a run's messages);
# BENCH_FLAGS='-latency 100 -throughput 200 -count 1' for a quicker run, or
# BENCH_FLAGS='-only lease' for one section (strategies, powertools, storm,
# sweep, coalesce, hot, cpu, coldstarts, lease, outbox).
BENCH_FLAGS ?=
bench: moto
	$(GO) build -C idem/cmd -o $(CURDIR)/bin/idem-bench ./idem-bench
	bin/idem-bench -go $(GO) -out idem/cmd/idem-bench/RESULTS.md -benchout idem/cmd/idem-bench/bench.txt $(BENCH_FLAGS)

# The application on this machine, without Docker: local DynamoDB and SQS,
# each function under the Lambda Runtime Interface Emulator, the HTTP API on
# 127.0.0.1:3000, the SQS event source mapping. Ctrl-C stops it all. Also
# builds bin/idem, the operator's command, whose lines the banner prints.
local: moto
	$(GO) build -C idem/cmd -o $(CURDIR)/bin/idem-local ./idem-local
	$(GO) build -C idem/cmd -o $(CURDIR)/bin/idem ./idem
	exec bin/idem-local $(LOCAL_FLAGS)

# `make local`, then every message of events/ delivered three times, and the
# balances: one effect per message.
demo: moto
	$(GO) build -C idem/cmd -o $(CURDIR)/bin/idem-local ./idem-local
	exec bin/idem-local -demo -quiet $(LOCAL_FLAGS)
