# The project's everyday commands. `make test` is the README's test command;
# .ci/run runs the same steps (without make), and more: go vet, gofmt.

GOLANGCI_LINT = go tool -modfile=tools/go.mod golangci-lint

.PHONY: test test-long lint fuzz bench

# The everyday run: about a minute on two cores with a warm build cache.
test:
	go test -race ./...

# Everything, the long tests too (files built with the tag `long`: the soak,
# crashes, graceful shutdown, a full disk, replicas, database faults, the
# terminal, and more seeds of the model and property tests): about four
# minutes on two cores.
test-long:
	go test -race -tags long -timeout 30m ./...

# golangci-lint v2, pinned in tools/go.mod (built on first use, a few
# minutes); both builds, so that the long tests' files are linted too.
lint:
	$(GOLANGCI_LINT) run ./...
	$(GOLANGCI_LINT) run --build-tags long ./...

# Each fuzz target for 10 s.
fuzz:
	go test -run '^$$' -fuzz '^FuzzFolderCodec$$' -fuzztime 10s ./index/
	go test -run '^$$' -fuzz '^FuzzAuthenticate$$' -fuzztime 10s ./httpapi/auth/
	go test -run '^$$' -fuzz '^FuzzQueryParameters$$' -fuzztime 10s ./httpapi/

# The performance figures, each beside its limit (see the README).
bench:
	go run ./bench
