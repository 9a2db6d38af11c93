# One Makefile for people, CI and `sam build` (BuildMethod: makefile).
GO     ?= go
PYTHON ?= python3

.PHONY: test bench moto

# moto is the local DynamoDB- and SQS-compatible server the tests run against
# (through idem/localdynamo). Installed when missing.
moto:
	@$(PYTHON) -c 'import moto, flask, werkzeug' 2>/dev/null || \
	  $(PYTHON) -m pip install 'moto[server]' || \
	  { echo "make: could not install moto; install Python 3 and run: pip install 'moto[server]'" >&2; exit 1; }

test: moto
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

bench: moto
	$(GO) test -run '^$$' -bench . -benchmem ./...
