package admin_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/httpapi/admin"
	"github.com/foldermirror/foldermirror/syncer"
	"github.com/prometheus/client_golang/prometheus"
)

// scheduler plays a scheduler whose syncs report two steps and succeed.
type scheduler struct{ followed []string }

func (s *scheduler) Follow(_ context.Context, name string, mode syncer.Mode, events chan<- syncer.Event) (bool, error) {
	s.followed = append(s.followed, name)
	go func() {
		events <- syncer.Event{Job: name, Progress: &syncer.Progress{Library: name, Phase: "listing", Done: 1}}
		events <- syncer.Event{Job: name, Result: &syncer.Result{Library: name, Full: mode == syncer.Full, Folders: 3}}
		close(events)
	}()
	return true, nil
}

func (s *scheduler) Status() []syncer.JobStatus {
	return []syncer.JobStatus{{Name: "directory:example.com"}, {Name: "eng", LastError: "boom"}}
}

// index plays an index where only synced libraries exist.
type index struct{ synced map[string]bool }

func (i *index) Library(_ context.Context, id string) (*fm.LibraryState, error) {
	if !i.synced[id] {
		return nil, fm.Errorf(fm.ENOTFOUND, "not synced")
	}
	return &fm.LibraryState{ID: id, Folders: 3, Revision: 2}, nil
}

func (i *index) Path() string { return "/nonexistent/index.db" }

// Warmed plays the API: a synced library is ready at once.
func (i *index) Warmed(_ context.Context, id string) bool { return i.synced[id] }

func newServer(t *testing.T) (*httptest.Server, *scheduler, *index) {
	t.Helper()
	cfg, err := config.Parse([]byte(`
storage: {credentialsFile: key.json}
domains: [{name: example.com, adminEmail: admin@example.com}]
libraries: [{id: eng, domain: example.com, storageAccount: s@example.com, rootFolderId: r}]
`), filepath.Join("testdata", "config.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "foldermirror_test_total", Help: "a test counter"}))
	sc, idx := &scheduler{}, &index{synced: map[string]bool{}}
	srv := httptest.NewServer(admin.New(cfg, sc, idx, idx, reg, slog.New(slog.NewTextHandler(io.Discard, nil))).Handler())
	t.Cleanup(srv.Close)
	return srv, sc, idx
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestHealthAndReadiness(t *testing.T) {
	srv, _, idx := newServer(t)
	if code, body := get(t, srv.URL+"/healthz"); code != 200 || !strings.Contains(body, `"service": "foldermirror"`) {
		t.Errorf("healthz: %d %s", code, body)
	}
	if code, body := get(t, srv.URL+"/readyz"); code != 503 || !strings.Contains(body, "eng") {
		t.Errorf("readyz before a sync: %d %s", code, body)
	}
	idx.synced["eng"] = true
	if code, _ := get(t, srv.URL+"/readyz"); code != 200 {
		t.Errorf("readyz after a sync: %d", code)
	}
}

func TestStatusAndMetrics(t *testing.T) {
	srv, _, idx := newServer(t)
	idx.synced["eng"] = true
	code, body := get(t, srv.URL+"/status")
	var st struct {
		Libraries []struct {
			Name      string
			LastError string
			Synced    bool
			Folders   int
			Revision  int
		}
		Directories []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil {
		t.Fatalf("status: %d %v %s", code, err, body)
	}
	if len(st.Libraries) != 1 || st.Libraries[0].LastError != "boom" || !st.Libraries[0].Synced || st.Libraries[0].Revision != 2 ||
		len(st.Directories) != 1 || st.Directories[0].Name != "directory:example.com" {
		t.Errorf("status %+v", st)
	}
	if code, body := get(t, srv.URL+"/metrics"); code != 200 || !strings.Contains(body, "foldermirror_test_total 0") {
		t.Errorf("metrics: %d %s", code, body)
	}
}

func TestSyncStreamsEvents(t *testing.T) {
	srv, sc, _ := newServer(t)
	for _, tc := range []struct {
		query  string
		status int
		jobs   []string
	}{
		{"library=eng&mode=full", 200, []string{"eng"}},
		{"", 200, []string{"directory:example.com", "eng"}},
		{"library=nope", 404, nil},
		{"mode=sideways", 400, nil},
	} {
		sc.followed = nil
		resp, err := http.Post(srv.URL+"/sync?"+tc.query, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		var finals []string
		lines := bufio.NewScanner(resp.Body)
		for lines.Scan() && resp.StatusCode == 200 {
			var ev syncer.Event
			if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
				t.Fatalf("%s: line %q: %v", tc.query, lines.Text(), err)
			}
			if ev.Final() {
				finals = append(finals, ev.Job)
			}
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status || len(finals) != len(tc.jobs) || len(sc.followed) != len(tc.jobs) {
			t.Errorf("%q: status %d, finals %v, followed %v", tc.query, resp.StatusCode, finals, sc.followed)
		}
	}
}
