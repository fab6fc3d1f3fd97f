# The project's everyday commands. `make test` is the README's test command;
# CI (.ci/run) prepares the machine, then runs `make ci`.

GOLANGCI_LINT = go tool -modfile=tools/go.mod golangci-lint

# The toolchain go.mod names (toolchain line), whatever GOTOOLCHAIN says.
export GOTOOLCHAIN := $(shell sed -n 's/^toolchain //p' go.mod)

# The packages that have tests built with the tag `long`.
LONG_PACKAGES = $(shell git ls-files '*_test.go' | xargs grep -l '^//go:build long$$' | xargs -r -n1 dirname | sort -u | sed 's|^|./|')

.PHONY: ci vet test test-long lint vuln fuzz bench

# What CI runs, in order.
ci: vet test test-long lint vuln fuzz

# go vet in both builds (with and without the tag `long`), and gofmt.
vet:
	go vet ./...
	go vet -tags long ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted" >&2; exit 1; fi

# The everyday run: its budget and latest time are in CONTRIBUTING.md;
# .ci/run prints its wall time.
test:
	go test -race ./...

# The long tests (files built with the tag `long`: the soak, crashes,
# graceful shutdown, a full disk, replicas, database faults, the terminal,
# and more seeds of the model and property tests), with the everyday tests
# of their packages: about four minutes on two cores.
test-long:
	@[ -n "$(LONG_PACKAGES)" ] || { echo "no test file is built with the tag long" >&2; exit 1; }
	go test -race -tags long -timeout 30m $(LONG_PACKAGES)

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
	go test -run '^$$' -fuzz '^FuzzFolderCodec$$' -fuzztime 10s ./index/bolt/
	go test -run '^$$' -fuzz '^FuzzAuthenticate$$' -fuzztime 10s ./httpapi/auth/
	go test -run '^$$' -fuzz '^FuzzQueryParameters$$' -fuzztime 10s ./httpapi/
	go test -run '^$$' -fuzz '^FuzzFieldsSelection$$' -fuzztime 10s ./internal/googlefake/
	go test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 10s ./internal/drivelist/
	go test -run '^$$' -fuzz '^FuzzDecodeChanges$$' -fuzztime 10s ./syncer/

# The performance figures, each beside its limit (see bench/README.md).
bench:
	go run ./bench
