//go:build long

package tests

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/httpapi/admin"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/pgtest"
)

// readyz returns a daemon's /readyz status and body.
func readyz(t *testing.T, adminBase string) (int, string) {
	t.Helper()
	resp, err := http.Get(adminBase + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestDatabaseFaults: a daemon whose PostgreSQL index cannot be reached at
// start says so, naming the host, is not ready and answers 503, creates
// nothing, and starts once the database answers; a daemon that loses its
// database keeps answering from what it read, says it is degraded, fails
// its syncs, and is whole again when the database returns.
func TestDatabaseFaults(t *testing.T) {
	url := pgtest.NewDatabase(t)
	proxy, via := pgtest.NewProxy(t, url)
	fake := fmtest.StartGoogle(t)
	m := buildE2EWorld(fake)
	c := fmtest.Config(t, fake, t.TempDir())
	c.Index = config.Index{URL: via, LeaseTTL: 3 * time.Second}
	c.Domains = []config.Domain{{Name: "example.com", Users: []string{"alice@example.com"}}}
	c.Libraries = []config.Library{{ID: "eng", Name: "Engineering", Domain: "example.com", StorageAccount: e2eStorage, RootFolderID: m.root}}
	path := fmtest.WriteConfig(t, c)
	proxy.Cut()

	// It starts without its database: startServe fails the test if it exits
	// before it serves.
	serve := startServe(t, path)
	api, adminBase, logs := serve.api, serve.admin, serve.stderr
	token := fake.GoogleIDToken(e2eClient, "alice@example.com")

	waitUntil(t, 10*time.Second, "a log line naming the database that cannot be reached", func() bool {
		return strings.Contains(logs.String(), "127.0.0.1") && strings.Contains(logs.String(), "cannot be reached")
	})
	if code, body := readyz(t, adminBase); code != http.StatusServiceUnavailable || !strings.Contains(body, "waiting for the index") {
		t.Errorf("readyz without the database: %d %s", code, body)
	}
	getJSON(t, api+"/folder/v1/libraries/eng/folders", token, http.StatusServiceUnavailable, nil)
	if got := pgtest.Tables(t, url); len(got) != 0 {
		t.Errorf("tables created while the database could not be reached: %v", got)
	}

	proxy.Restore()
	waitUntil(t, 60*time.Second, "ready once the database answers (it is tried again with backoff)", func() bool {
		code, _ := readyz(t, adminBase)
		return code == http.StatusOK
	})
	before := getJSON(t, api+"/folder/v1/libraries/eng/folders", token, http.StatusOK, nil)

	proxy.Cut()
	waitUntil(t, 10*time.Second, "degraded once the database is lost", func() bool {
		_, body := readyz(t, adminBase)
		return strings.Contains(body, "degraded")
	})
	if code, _ := readyz(t, adminBase); code != http.StatusOK {
		t.Errorf("readyz while degraded: %d; still serving what it read, so 200", code)
	}
	if got := getJSON(t, api+"/folder/v1/libraries/eng/folders", token, http.StatusOK, nil); !bytes.Equal(got, before) {
		t.Error("the answer changed while the database was lost")
	}
	var st struct {
		Index struct{ Problem string } `json:"index"`
	}
	getJSON(t, adminBase+"/status", "", http.StatusOK, &st)
	if !strings.Contains(st.Index.Problem, "127.0.0.1") {
		t.Errorf("status while degraded: problem %q", st.Index.Problem)
	}
	if ev := adminSync(t, adminBase); ev.Error == "" {
		t.Error("a sync succeeded while the database was lost")
	}

	proxy.Restore()
	waitUntil(t, 10*time.Second, "whole again once the database returns", func() bool {
		_, body := readyz(t, adminBase)
		return strings.Contains(body, `"ready"`)
	})
	if ev := adminSync(t, adminBase); ev.Error != "" {
		t.Errorf("a sync once the database returned: %s", ev.Error)
	}
	if got := getJSON(t, api+"/folder/v1/libraries/eng/folders", token, http.StatusOK, nil); !bytes.Equal(got, before) {
		t.Error("the answer changed once the database returned (nothing changed in Drive)")
	}
}

// adminSync asks a daemon for an incremental sync of eng and returns its
// last event.
func adminSync(t *testing.T, adminBase string) (last struct{ Error string }) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, adminBase+"/sync?library=eng", nil)
	req.Header.Set(admin.RequestHeader, "test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for dec.More() {
		if err := dec.Decode(&last); err != nil {
			t.Fatal(err)
		}
	}
	return last
}
