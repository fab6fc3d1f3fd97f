//go:build long

package auth_test

// Built with -tags long, TestUnknownKeyIDsRefetchAtMostOncePerMinute forges
// forty times more key IDs than the everyday run.
const forgedKeyIDs = 10_000
