//go:build long

package googlefake_test

// Built with -tags long, TestTimeQueries lists each query in every order.
const everyTimeOrder = true
