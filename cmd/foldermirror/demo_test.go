package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"testing"
)

// A taken port is said at once, naming the flag, before any sync.
func TestDemoTakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, flag := range []string{"--listen", "--admin-listen"} {
		t.Run(flag, func(t *testing.T) {
			var out bytes.Buffer
			c := &demoCommand{stdout: &out, stderr: io.Discard}
			args := []string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", flag, taken.Addr().String()}
			if err := c.ParseFlags(args); err != nil {
				t.Fatal(err)
			}
			err := c.Run(context.Background())
			c.Close()
			if err == nil || !strings.HasPrefix(err.Error(), flag+": "+taken.Addr().String()+" is already in use") {
				t.Errorf("error %v; want it to name %s and the address in use", err, flag)
			}
			if out.Len() > 0 {
				t.Errorf("the demo went on before saying the port is taken:\n%s", out.String())
			}
		})
	}
}
