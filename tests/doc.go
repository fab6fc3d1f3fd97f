// Package tests holds foldermirror's system tests: they build the binary
// (./cmd/foldermirror, once per test process), run it as an operator
// would, against a fake of Google's APIs (internal/googlefake), and talk to
// it only through its command line, its API and its admin listener; and
// they check the files it is deployed with (the Dockerfile, deploy/).
//
// The everyday tests run with the others:
//
//	go test -race ./tests/
//
// The long ones (the soak, crashes, the graceful shutdown, a full disk,
// replicas on PostgreSQL, database faults, the terminal, more seeds of the
// property test) are in files built with the tag long:
//
//	go test -race -tags long ./tests/
//
// The PostgreSQL variants and the replicas need a server, named by
// FOLDERMIRROR_TEST_POSTGRES (see internal/pgtest). The package has no
// code of its own: this file and the tests.
package tests
