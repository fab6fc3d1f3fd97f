//go:build !long

package googlefake_test

// The everyday run (without -tags long) lists each query of TestTimeQueries
// in one order, taking the orders in turn; -tags long, in every order.
const everyTimeOrder = false
