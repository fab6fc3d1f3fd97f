//go:build long

package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/index/bolt"
	"github.com/foldermirror/foldermirror/internal/demo"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// TestGracefulShutdown runs the built daemon, and on SIGTERM (and SIGINT)
// checks that a request in flight is answered whole, a running full sync
// stops without touching the index, and the process exits within 10 s.
func TestGracefulShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) { checkShutdown(t, bin, sig) })
	}
}

func checkShutdown(t *testing.T, bin string, sig syscall.Signal) {
	fake := fmtest.StartGoogle(t)
	world := demo.Build(fake, demo.Spec{Seed: 3, FoldersPerLibrary: 1500})
	dir := t.TempDir()
	keyFile := fmtest.WriteKey(t, fake, filepath.Join(dir, "key.json"))
	listen, adminAddr := freePort(t), freePort(t)
	c := world.Config(listen, adminAddr, filepath.Join(dir, "data"), keyFile)
	c.Path = filepath.Join(dir, "config.yaml")
	cfgPath := fmtest.WriteConfig(t, c)

	if out, err := exec.Command(bin, "sync", "--config", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("first sync: %v\n%s", err, out)
	}
	db, err := bolt.Open(filepath.Join(dir, "data"), quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	before, _ := db.Library(context.Background(), "lib-sales")
	db.Close()

	cmd := exec.Command(bin, "serve", "--config", cfgPath, "--log-level", "warn")
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitReady(t, "http://"+adminAddr+"/readyz")

	// A full resync of the shared drive, made slow: a second a Drive call.
	fake.SetLatency(time.Second)
	syncDone := make(chan string, 1)
	go func() { syncDone <- followSync(t, "http://"+adminAddr+"/sync?library=lib-sales&mode=full") }()
	time.Sleep(300 * time.Millisecond)

	// A long answer, read slowly: the signal arrives while it is in flight.
	token := fake.GoogleIDToken(demo.ClientID, "bob@example.com", googlefake.WithTTL(time.Hour))
	req, _ := http.NewRequest(http.MethodGet, "http://"+listen+"/folder/v1/libraries/lib-sales/folders", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := smallWindowClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	body := slowRead(t, resp.Body)
	var answer struct{ Items []json.RawMessage }
	if err := json.Unmarshal(body, &answer); err != nil || len(answer.Items) < 1000 {
		t.Errorf("the request in flight got %d bytes, %d folders, err %v", len(body), len(answer.Items), err)
	}

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit: %v\n%s", err, logs.String())
		}
		if d := time.Since(signalled); d > 10*time.Second {
			t.Errorf("exited %v after the signal", d)
		}
	case <-time.After(12 * time.Second):
		t.Fatalf("still running 12 s after %v\n%s", sig, logs.String())
	}
	if final := <-syncDone; !strings.Contains(final, "context canceled") {
		t.Errorf("the running sync ended with %q, want it cancelled", final)
	}
	db, err = bolt.Open(filepath.Join(dir, "data"), quietLogger())
	if err != nil {
		t.Fatalf("the index after shutdown: %v", err)
	}
	defer db.Close()
	after, _ := db.Library(context.Background(), "lib-sales")
	if after.Revision != before.Revision || after.Folders != before.Folders || after.LastFullSync != before.LastFullSync {
		t.Errorf("the cancelled sync changed the library: %+v, was %+v", after, before)
	}
}

// smallWindowClient receives through a 4 KiB socket buffer, so that a long
// answer read slowly keeps its handler writing, in flight, all along.
func smallWindowClient() *http.Client {
	dialer := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		c.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return err
	}}
	return &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
}

// followSync starts a resync through the admin listener and returns its
// final event's error (or "ok").
func followSync(t *testing.T, url string) string {
	resp, err := http.Post(url, "application/json", nil)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	last := ""
	for lines := bufio.NewScanner(resp.Body); lines.Scan(); {
		last = lines.Text()
	}
	var ev struct{ Error string }
	json.Unmarshal([]byte(last), &ev)
	if ev.Error == "" {
		return fmt.Sprintf("ok (%s)", last)
	}
	return ev.Error
}

func slowRead(t *testing.T, r io.ReadCloser) []byte {
	t.Helper()
	defer r.Close()
	var body []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		body = append(body, buf[:n]...)
		if err == io.EOF {
			return body
		}
		if err != nil {
			t.Errorf("reading the answer in flight: %v", err)
			return body
		}
		time.Sleep(30 * time.Millisecond)
	}
}
