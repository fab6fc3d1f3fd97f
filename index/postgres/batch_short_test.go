//go:build !long

package postgres_test

// smallBatchLimits are the statements a round trip and the folders an
// update's memory hold that TestUpdatesInSmallBatches runs the update tests
// with: batches cut at odd places in the everyday run, one statement at a
// time too with -tags long.
var smallBatchLimits = [][2]int{{4, 3}}
