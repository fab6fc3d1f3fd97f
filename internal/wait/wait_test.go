package wait_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/internal/wait"
)

func TestReceive(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if got := wait.Receive(t, ch, "a value"); got != 7 {
		t.Errorf("Receive = %d, want 7", got)
	}
	close(ch)
	if got := wait.Receive(t, ch, "the close"); got != 0 {
		t.Errorf("Receive of a closed channel = %d, want 0", got)
	}
}

func TestUntil(t *testing.T) {
	n := 0
	wait.Until(t, "the third look", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Errorf("looked %d times, want 3", n)
	}
}

func TestGroup(t *testing.T) {
	var wg sync.WaitGroup
	ran := false
	wg.Go(func() { ran = true })
	wait.Group(t, &wg, "the goroutine")
	if !ran {
		t.Error("Group returned before the goroutine ended")
	}
}

// fatalRecorder is a testing.TB whose Fatalf records its message and
// returns.
type fatalRecorder struct {
	testing.TB
	message string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) { r.message = fmt.Sprintf(format, args...) }

// Past the bound, the waits fail, saying what they waited for.
func TestWaitsFailPastTheBound(t *testing.T) {
	r := &fatalRecorder{TB: t}
	wait.ReceiveWithin(r, make(chan int), "a value never sent", 20*time.Millisecond)
	if r.message != "waited 20ms for a value never sent" {
		t.Errorf("Receive's failure: %q", r.message)
	}
	r.message = ""
	wait.UntilWithin(r, "a condition never true", func() bool { return false }, 20*time.Millisecond)
	if r.message != "waited 20ms for a condition never true" {
		t.Errorf("Until's failure: %q", r.message)
	}
}
