//go:build long

package postgres_test

// smallBatchLimits: see batch_short_test.go.
var smallBatchLimits = [][2]int{{1, 1}, {4, 3}}
