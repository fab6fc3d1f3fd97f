package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi/admin"
	"github.com/foldermirror/foldermirror/schedule"
)

// newClientOf returns a client, with token, of an admin listener served
// on loopback with serverToken; the listener's scheduler and index.
func newClientOf(t *testing.T, serverToken, token string) (*admin.Client, *scheduler, *index) {
	t.Helper()
	h, sc, idx := newHandler(t, "127.0.0.1:8081", serverToken)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return admin.NewClient(srv.URL, token, srv.Client()), sc, idx
}

// The client reads the listener's answers into the types it writes them
// from: health with its proof, readiness, status, a sync's events.
func TestClientReadsTheAnswers(t *testing.T) {
	ctx := context.Background()
	const token = "s3cret-Token/42="
	c, sc, idx := newClientOf(t, token, token)
	health, err := c.Health(ctx)
	if err != nil || health.Service != admin.Service || health.Status != "ok" || health.Proof == "" {
		t.Errorf("health %+v, %v; want the service, ok, and a proof", health, err)
	}
	ready, err := c.Ready(ctx)
	if !errors.Is(err, admin.ErrNotReady) || ready == nil || !slices.Equal(ready.Libraries, []string{"eng"}) ||
		!strings.Contains(err.Error(), "/readyz): waiting for a first sync, or for its catalog: eng") {
		t.Errorf("readiness before a sync: %+v, %v; want not ready, waiting for eng", ready, err)
	}
	idx.synced["eng"] = true
	if ready, err := c.Ready(ctx); err != nil || ready.Status != "ready" {
		t.Errorf("readiness after a sync: %+v, %v", ready, err)
	}
	st, err := c.Status(ctx)
	if err != nil || len(st.Libraries) != 1 || st.Libraries[0].LastError != "boom" || !st.Libraries[0].Synced ||
		st.Libraries[0].Revision != 2 || len(st.Directories) != 1 || st.Directories[0].LastFull.Users != 3 || st.Index.Kind != "bbolt" {
		t.Errorf("status %+v, %v", st, err)
	}
	var events []schedule.Event
	if err := c.Sync(ctx, "eng", fm.SyncFull, func(ev schedule.Event) { events = append(events, ev) }); err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 || events[0].Progress == nil || events[1].Result == nil || !events[1].Result.Full || !slices.Equal(sc.followed, []string{"eng"}) {
		t.Errorf("events %+v, followed %v; want eng's progress, then its full sync's result", events, sc.followed)
	}
	err = c.Sync(ctx, "nope", fm.SyncAuto, func(schedule.Event) { t.Error("an event of a refused sync") })
	if !errors.Is(err, admin.ErrRefused) || !strings.HasSuffix(err.Error(), ": 404 Not Found: no library nope") {
		t.Errorf("a sync of no library: %v; want refused, with the daemon's reason", err)
	}
}

// recorder plays a process on adminListen, a daemon of token (none for
// ""), that records the Authorization headers it is sent.
type recorder struct {
	token string
	mu    sync.Mutex
	sent  []string
}

func (p *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if a := r.Header.Get("Authorization"); a != "" {
		p.sent = append(p.sent, r.Method+" "+r.URL.Path)
	}
	p.mu.Unlock()
	switch r.URL.Path {
	case "/healthz":
		answer := admin.Health{Status: "ok", Service: admin.Service}
		if challenge := r.URL.Query().Get(admin.ChallengeParam); p.token != "" {
			answer.Proof = admin.Proof(p.token, challenge)
		}
		json.NewEncoder(w).Encode(answer)
	case "/readyz":
		json.NewEncoder(w).Encode(admin.Readiness{Status: "ready"})
	case "/status":
		json.NewEncoder(w).Encode(admin.Status{})
	case "/sync":
		json.NewEncoder(w).Encode(schedule.Event{Job: "eng", Result: &fm.SyncResult{Library: "eng"}})
	}
}

// The client sends its token only once what answers proved it holds it,
// and then to each request; a process that does not prove it gets none.
func TestClientSendsTheTokenOnlyToItsHolder(t *testing.T) {
	ctx := context.Background()
	asks := map[string]func(c *admin.Client) error{
		"ready":  func(c *admin.Client) error { _, err := c.Ready(ctx); return err },
		"status": func(c *admin.Client) error { _, err := c.Status(ctx); return err },
		"sync":   func(c *admin.Client) error { return c.Sync(ctx, "", fm.SyncAuto, func(schedule.Event) {}) },
	}
	for _, tt := range []struct {
		name  string
		knows string
		sent  []string
	}{
		{"an impostor", "", nil},
		{"another token's daemon", "not-the-token", nil},
		{"the daemon", "s3cret-token", []string{"GET /readyz", "GET /status", "POST /sync"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &recorder{token: tt.knows}
			srv := httptest.NewServer(p)
			defer srv.Close()
			c := admin.NewClient(srv.URL, "s3cret-token", srv.Client())
			for _, name := range []string{"ready", "status", "sync"} {
				err := asks[name](c)
				if tt.sent == nil && (!errors.Is(err, admin.ErrUnproven) || !strings.Contains(err.Error(), srv.Listener.Addr().String())) {
					t.Errorf("%s: %v; want it unproven, naming %s", name, err, srv.Listener.Addr())
				}
				if tt.sent != nil && err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
			if !slices.Equal(p.sent, tt.sent) {
				t.Errorf("the token went with %q; want %q", p.sent, tt.sent)
			}
		})
	}
}

// What does not answer, or answers but is no foldermirror daemon, is no
// daemon; a sync's stream that ends without a job's result is an error.
func TestClientNamesWhatAnswers(t *testing.T) {
	ctx := context.Background()
	stranger := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sync" {
			w.Write([]byte(`{"job":"eng","progress":{"phase":"listing","done":1}}` + "\n"))
			return
		}
		w.Write([]byte("hello"))
	}))
	defer stranger.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	for _, tt := range []struct {
		name string
		base string
		ask  func(c *admin.Client) error
		is   error
		says string
	}{
		{"health of nothing", down.URL, func(c *admin.Client) error { _, err := c.Health(ctx); return err }, admin.ErrNoDaemon,
			"no foldermirror daemon answers at " + down.URL + ": "},
		{"health of a stranger", stranger.URL, func(c *admin.Client) error { _, err := c.Health(ctx); return err }, admin.ErrNoDaemon,
			"it answered 200 OK, not a foldermirror daemon's health"},
		{"readiness of nothing", down.URL, func(c *admin.Client) error { _, err := c.Ready(ctx); return err }, admin.ErrNoDaemon,
			"no foldermirror daemon answers at " + down.URL + "/readyz: "},
		{"readiness of a stranger", stranger.URL, func(c *admin.Client) error { _, err := c.Ready(ctx); return err }, nil,
			stranger.URL + "/readyz answered 200 OK, not a foldermirror readiness (is it the admin listener?)"},
		{"a sync without a result", stranger.URL, func(c *admin.Client) error { return c.Sync(ctx, "", fm.SyncAuto, func(schedule.Event) {}) }, nil,
			"the daemon ended the sync without a result (is it shutting down?)"},
	} {
		err := tt.ask(admin.NewClient(tt.base, "", nil))
		if err == nil || (tt.is != nil && !errors.Is(err, tt.is)) || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: %v; want an error saying %q", tt.name, err, tt.says)
		}
	}
}

// The typed answers are written as the listener wrote its maps before,
// byte for byte: health with and without its proof, each readiness with
// and without the token, a refusal.
func TestAnswersKeepTheirJSON(t *testing.T) {
	const token = "s3cret-Token/42="
	const problem = "the index database does not answer: connection refused"
	encode := func(v any) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	for _, tt := range []struct {
		name  string
		state func(*index)
		path  string
		auth  bool
		was   any // the map the listener wrote
	}{
		{"health", func(*index) {}, "/healthz", false, map[string]string{"status": "ok", "service": admin.Service}},
		{"health, proved", func(*index) {}, "/healthz?challenge=n0nce", false,
			map[string]string{"status": "ok", "service": admin.Service, "proof": admin.Proof(token, "n0nce")}},
		{"index down", func(i *index) { i.down, i.problem = true, problem }, "/readyz", true,
			map[string]any{"status": "waiting for the index", "problem": problem}},
		{"index down, no token", func(i *index) { i.down, i.problem = true, problem }, "/readyz", false,
			map[string]any{"status": "waiting for the index"}},
		{"waiting for a library", func(*index) {}, "/readyz", true,
			map[string]any{"status": "waiting for a first sync, or for its catalog", "libraries": []string{"eng"}}},
		{"degraded", func(i *index) { i.synced["eng"], i.problem = true, problem }, "/readyz", true,
			map[string]any{"status": "degraded", "problem": problem}},
		{"ready", func(i *index) { i.synced["eng"] = true }, "/readyz", true, map[string]any{"status": "ready"}},
		{"refused", func(*index) {}, "/status", false, map[string]string{"error": "this admin listener needs Authorization: Bearer " +
			"and the token in the file adminTokenFile of the daemon's configuration"}},
	} {
		h, _, idx := newHandler(t, "127.0.0.1:8081", token)
		tt.state(idx)
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8081"+tt.path, nil)
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, loopbackAddr))
		req.RemoteAddr = "127.0.0.1:40000"
		if tt.auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if want := encode(tt.was); rec.Body.String() != want {
			t.Errorf("%s: wrote\n%s\nwant\n%s", tt.name, rec.Body, want)
		}
	}
}

// loopbackAddr is the address a request of TestAnswersKeepTheirJSON
// reached: the listener's, on loopback.
var loopbackAddr net.Addr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8081}
