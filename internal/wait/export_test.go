package wait

// ReceiveWithin and UntilWithin are Receive and Until with a bound, for
// the tests of the bound.
var (
	ReceiveWithin = receiveWithin[int]
	UntilWithin   = untilWithin
)
