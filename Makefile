# The project's everyday commands. `make test` is the README's test command;
# .ci/run runs the same steps (without make), and more: go vet, gofmt.

GOLANGCI_LINT = go tool -modfile=tools/go.mod golangci-lint

# The toolchain go.mod names (toolchain line), whatever GOTOOLCHAIN says.
export GOTOOLCHAIN := $(shell sed -n 's/^toolchain //p' go.mod)

.PHONY: test test-long lint vuln fuzz bench

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

# govulncheck, pinned in tools/go.mod, against a database made from the
# reports of golang.org/x/vulndb (pinned there too: update it with
# `cd tools && go get golang.org/x/vulndb@latest && go mod tidy -e`), since
# govulncheck's online database is not reachable from CI.
vuln:
	rm -rf .vulndb && go tool -modfile=tools/go.mod indexdb -out .vulndb \
		-vulns "$$(go mod download -modfile=tools/go.mod -json golang.org/x/vulndb | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p')/data/osv"
	go tool -modfile=tools/go.mod govulncheck -db "file://$(CURDIR)/.vulndb" ./...

# Each fuzz target for 10 s.
fuzz:
	go test -run '^$$' -fuzz '^FuzzFolderCodec$$' -fuzztime 10s ./index/
	go test -run '^$$' -fuzz '^FuzzAuthenticate$$' -fuzztime 10s ./httpapi/auth/
	go test -run '^$$' -fuzz '^FuzzQueryParameters$$' -fuzztime 10s ./httpapi/

# The performance figures, each beside its limit (see bench/README.md).
bench:
	go run ./bench
