//go:build long

package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/httpapi/admin"
	"github.com/foldermirror/foldermirror/index/postgres"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/pgtest"
)

// replica is a `foldermirror serve` process of the built binary.
type replica struct {
	cmd        *exec.Cmd
	api, admin string // base URLs
	log        *bytes.Buffer
}

// startReplica starts a replica of the configuration at path, on ports of
// its own, stopped when the test ends.
func startReplica(t *testing.T, bin, path string, n int) *replica {
	t.Helper()
	r := &replica{api: "http://" + freePort(t), admin: "http://" + freePort(t), log: &bytes.Buffer{}}
	r.cmd = exec.Command(bin, "serve", "--config", path, "--log-level", "info")
	r.cmd.Env = append(os.Environ(),
		"FOLDERMIRROR_LISTEN="+strings.TrimPrefix(r.api, "http://"),
		"FOLDERMIRROR_ADMINLISTEN="+strings.TrimPrefix(r.admin, "http://"),
		"FOLDERMIRROR_DATADIR="+filepath.Join(t.TempDir(), fmt.Sprint("data", n)))
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		_ = r.cmd.Wait()
		if t.Failed() {
			t.Logf("replica %d's log:\n%s", n, r.log)
		}
	})
	return r
}

// status reads a replica's /status.
func (r *replica) status(t *testing.T) (st struct {
	Libraries []struct {
		Name            string    `json:"name"`
		Revision        uint64    `json:"revision"`
		LeaseHolder     string    `json:"leaseHolder"`
		LastFullSync    time.Time `json:"lastFullSync"`
		LastIncremental time.Time `json:"lastIncrementalSync"`
	} `json:"libraries"`
}) {
	t.Helper()
	resp, err := http.Get(r.admin + "/status")
	if err != nil {
		return st
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(&st)
	return st
}

// answer is what a replica answered.
type answer struct {
	status int
	etag   string
	body   string
}

func get(t *testing.T, url, token string) answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, body := fmtest.Do(t, req)
	return answer{resp.StatusCode, resp.Header.Get("ETag"), string(body)}
}

// TestReplicas: three `foldermirror serve` processes of the built binary
// on one PostgreSQL database, with an incremental schedule every 2 s on
// each: they answer alike; together they make one process's scheduled
// syncs; a commit is served by all within 2 s; /status names the lease
// holder; `foldermirror sync` gives up on a library another process syncs,
// naming it; and after the lease holder is killed mid-sync, the library is
// old or new, and another replica syncs it within the lease's TTL and a
// schedule period.
func TestReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three replicas of the built binary")
	}
	url := pgtest.NewDatabase(t)
	bin := buildBinary(t)
	fake := fmtest.StartGoogle(t)
	m := buildE2EWorld(fake)
	for i := range 3000 { // enough folders for a full sync to take a while
		m.add(m.root, fmt.Sprintf("bulk %04d", i))
	}
	c := e2eConfig(t, fake, m, fmtest.Bolt)
	c.Index = config.Index{URL: url, LeaseTTL: 3 * time.Second}
	c.Schedule = config.Schedule{Incremental: "@every 2s", Full: "0 3 1 1 *"}
	path := fmtest.WriteConfig(t, c)
	replicas := make([]*replica, 3)
	for i := range replicas {
		replicas[i] = startReplica(t, bin, path, i)
	}
	for i, r := range replicas {
		waitUntil(t, 60*time.Second, fmt.Sprintf("replica %d ready", i), func() bool {
			resp, err := http.Get(r.admin + "/readyz")
			if err == nil {
				resp.Body.Close()
			}
			return err == nil && resp.StatusCode == http.StatusOK
		})
	}

	t.Run("answers alike", func(t *testing.T) {
		folder := m.children(m.root)[0].id
		for _, user := range []string{"alice@example.com", "carol@example.com", "pat@partner.org"} {
			token := fake.GoogleIDToken(e2eClient, user)
			for _, path := range []string{"/folder/v1/libraries/eng/folders", "/folder/v1/files/" + m.root + "/children",
				"/folder/v1/files/" + folder, "/folder/v1/folders/" + folder + "/permissions", "/folder/v1/files/nope"} {
				first := get(t, replicas[0].api+path, token)
				for i, r := range replicas[1:] {
					if got := get(t, r.api+path, token); got != first {
						t.Errorf("%s %s: replica %d answered %d %s (%d bytes), replica 0 %d %s (%d bytes)", user, path,
							i+1, got.status, got.etag, len(got.body), first.status, first.etag, len(first.body))
					}
				}
			}
		}
	})

	t.Run("one process's scheduled syncs", func(t *testing.T) {
		fake.ResetCalls()
		const window = 7 * time.Second
		time.Sleep(window)
		calls := fake.CallCount("drive.changes.list")
		if most := int(window/(2*time.Second)) + 2; calls > most || calls == 0 {
			t.Errorf("%d changes.list calls in %s of a 2 s schedule on 3 replicas; want 1 to %d", calls, window, most)
		}
		t.Logf("%d incremental syncs in %s", calls, window)
	})

	t.Run("a commit served by all within 2 s", func(t *testing.T) {
		id := m.children(m.root)[1].id
		before := replicas[0].status(t).Libraries[0].Revision
		fake.Rename(id, "Renamed for the replicas")
		var committed time.Time
		waitUntil(t, 10*time.Second, "a replica committing the rename", func() bool {
			for _, r := range replicas {
				if st := r.status(t); len(st.Libraries) > 0 && st.Libraries[0].Revision > before {
					committed = time.Now()
					return true
				}
			}
			return false
		})
		token := fake.GoogleIDToken(e2eClient, "alice@example.com")
		waitUntil(t, 5*time.Second, "every replica serving the rename", func() bool {
			for _, r := range replicas {
				if !strings.Contains(get(t, r.api+"/folder/v1/files/"+id, token).body, "Renamed for the replicas") {
					return false
				}
			}
			return true
		})
		if took := time.Since(committed); took > 2*time.Second {
			t.Errorf("every replica served the commit %s after a replica showed it, want ≤ 2 s", took)
		}
	})

	fake.SetLatency(400 * time.Millisecond) // a full sync now takes seconds
	holder := replicas[0]
	follow := startFullSync(t, holder)
	defer follow.Body.Close()
	pid := fmt.Sprintf("pid %d", holder.cmd.Process.Pid)

	t.Run("status names the lease holder", func(t *testing.T) {
		waitUntil(t, 5*time.Second, "another replica naming the holder", func() bool {
			st := replicas[1].status(t)
			return len(st.Libraries) > 0 && strings.Contains(st.Libraries[0].LeaseHolder, pid)
		})
	})

	t.Run("sync gives up on a library another process syncs", func(t *testing.T) {
		var out, errOut bytes.Buffer
		cmd := exec.Command(bin, "sync", "--config", path, "--library", "eng", "--wait", "1s")
		cmd.Stdout, cmd.Stderr = &out, &errOut
		start := time.Now()
		err := cmd.Run()
		if err == nil || !strings.Contains(errOut.String(), pid) {
			t.Errorf("sync of a busy library: %v, said %q; want a failure naming %s", err, errOut.String(), pid)
		}
		if took := time.Since(start); took < time.Second {
			t.Errorf("gave up after %s, before its 1 s wait", took)
		}
	})

	t.Run("the holder killed mid-sync", func(t *testing.T) {
		old := snapshot(t, url)
		if err := holder.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		if got := snapshot(t, url); !reflect.DeepEqual(got, old) {
			t.Fatal("the library changed under a sync that never committed")
		}
		fake.SetLatency(0)
		others := replicas[1:]
		waitUntil(t, 3*time.Second+2*time.Second+5*time.Second, "another replica syncing after the lease lapsed", func() bool {
			for _, r := range others {
				st := r.status(t)
				if len(st.Libraries) > 0 && (st.Libraries[0].LastIncremental.After(killed) || st.Libraries[0].LastFullSync.After(killed)) {
					return true
				}
			}
			return false
		})
		t.Logf("another replica synced %s after the kill (lease TTL 3 s, schedule every 2 s)", time.Since(killed).Round(100*time.Millisecond))
	})
}

// startFullSync asks a replica for a full sync of eng, and returns the
// progress stream once the sync runs.
func startFullSync(t *testing.T, r *replica) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.admin+"/sync?library=eng&mode=full", nil)
	req.Header.Set(admin.RequestHeader, "test")
	for range 50 {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		line, _ := readLine(resp.Body)
		var ev struct {
			Progress json.RawMessage `json:"progress"`
			Error    string          `json:"error"`
		}
		_ = json.Unmarshal(line, &ev)
		if ev.Progress != nil {
			return resp
		}
		resp.Body.Close() // another replica had the lease: try again
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("the replica never got to sync")
	return nil
}

// readLine reads one line of a stream.
func readLine(r io.Reader) ([]byte, error) {
	var line []byte
	b := make([]byte, 1)
	for {
		if _, err := r.Read(b); err != nil {
			return line, err
		}
		if b[0] == '\n' {
			return line, nil
		}
		line = append(line, b[0])
	}
}

// snapshot reads library eng from the database directly.
func snapshot(t *testing.T, url string) []fm.SyncedFolder {
	t.Helper()
	db, err := postgres.Open(url, postgres.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	snap, err := db.Snapshot(context.Background(), "eng")
	if err != nil {
		t.Fatal(err)
	}
	return snap
}
