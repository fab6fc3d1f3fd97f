package admin_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi/admin"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/push"
	"github.com/foldermirror/foldermirror/schedule"
	"github.com/prometheus/client_golang/prometheus"
)

// scheduler plays a scheduler, of the configuration's directory and
// library, whose syncs report two steps and succeed.
type scheduler struct {
	followed  []string
	libraries *fm.LibrarySet
}

func (s *scheduler) Follow(_ context.Context, name string, mode fm.SyncMode, events chan<- schedule.Event) (bool, error) {
	s.followed = append(s.followed, name)
	go func() {
		events <- schedule.Event{Job: name, Progress: &fm.Progress{Library: name, Phase: "listing", Done: 1}}
		events <- schedule.Event{Job: name, Result: &fm.SyncResult{Library: name, Full: mode == fm.SyncFull, Folders: 3}}
		close(events)
	}()
	return true, nil
}

// Status is that of example.com's directory and of each library, eng's
// last sync having failed.
func (s *scheduler) Status() []schedule.JobStatus {
	var out []schedule.JobStatus
	for _, name := range s.Jobs("") {
		st, _ := s.JobStatus(name)
		out = append(out, st)
	}
	return out
}

func (s *scheduler) JobStatus(name string) (schedule.JobStatus, bool) {
	switch _, isLibrary := s.libraries.Library(name); {
	case name == "directory:example.com":
		return schedule.JobStatus{Name: name, LastFull: &schedule.RunStatus{Users: 3, UnreadableGroups: []string{"outside@other.org"}}}, true
	case name == "eng":
		return schedule.JobStatus{Name: name, LastError: "boom"}, true
	case isLibrary:
		return schedule.JobStatus{Name: name}, true
	}
	return schedule.JobStatus{}, false
}

func (s *scheduler) Jobs(library string) []string {
	return schedule.Plan{Directories: []string{"example.com"}, Libraries: s.libraries}.Jobs(library)
}

// index plays an index where only synced libraries exist; problem, when
// not "", is its database's, and down says it was never reached.
type index struct {
	synced  map[string]bool
	problem string
	down    bool
}

func (i *index) Library(_ context.Context, id string) (*fm.LibraryState, error) {
	if !i.synced[id] {
		return nil, fm.Errorf(fm.ENOTFOUND, "not synced")
	}
	return &fm.LibraryState{ID: id, Folders: 3, Revision: 2}, nil
}

func (i *index) Info(context.Context) fm.IndexInfo {
	return fm.IndexInfo{Kind: "bbolt", Location: "/nonexistent/index.db", Ready: !i.down, Problem: i.problem}
}

// Warmed plays the API: a synced library is ready at once.
func (i *index) Warmed(_ context.Context, id string) bool { return i.synced[id] }

func newServer(t *testing.T) (*httptest.Server, *scheduler, *index) {
	t.Helper()
	h, sc, idx := newHandler(t, "127.0.0.1:8081", "")
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, sc, idx
}

// newHandler returns the handler of an admin listener of a daemon that
// syncs example.com's directory and the library eng, listening on
// adminListen, with token as its token unless it is "".
func newHandler(t *testing.T, adminListen, token string) (http.Handler, *scheduler, *index) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "foldermirror_test_total", Help: "a test counter"}))
	sc, idx := &scheduler{libraries: fm.NewLibrarySet([]fm.Library{{ID: "eng", Name: "Engineering", Domain: "example.com"}})}, &index{synced: map[string]bool{}}
	return admin.New(admin.Options{Listen: adminListen, Libraries: sc.libraries,
		Token: token, Scheduler: sc, Index: idx, API: idx, Gatherer: reg,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler(), sc, idx
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, req)
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

// A daemon that discovers shared drives is not ready until it has read
// those discovered before from the index: it would answer 404 for them.
func TestReadinessWaitsForTheDrivesDiscoveredBefore(t *testing.T) {
	var loaded atomic.Bool
	sc, idx := &scheduler{libraries: fm.NewLibrarySet(nil)}, &index{synced: map[string]bool{}}
	h := admin.New(admin.Options{Listen: "127.0.0.1:8081", Libraries: sc.libraries, DiscoveredLoaded: loaded.Load,
		Scheduler: sc, Index: idx, API: idx, Gatherer: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler)}).Handler()
	readyz := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8081/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := readyz(); code != 503 || !strings.Contains(body, "waiting for the shared drives discovered before") {
		t.Errorf("readyz before the drives discovered before are read: %d %s", code, body)
	}
	loaded.Store(true)
	if code, body := readyz(); code != 200 {
		t.Errorf("readyz once they are read: %d %s", code, body)
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
		Directories []struct {
			Name     string
			LastFull struct{ UnreadableGroups []string }
		}
	}
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil {
		t.Fatalf("status: %d %v %s", code, err, body)
	}
	if len(st.Libraries) != 1 || st.Libraries[0].LastError != "boom" || !st.Libraries[0].Synced || st.Libraries[0].Revision != 2 ||
		len(st.Directories) != 1 || st.Directories[0].Name != "directory:example.com" ||
		!slices.Equal(st.Directories[0].LastFull.UnreadableGroups, []string{"outside@other.org"}) {
		t.Errorf("status %+v", st)
	}
	if code, body := get(t, srv.URL+"/metrics"); code != 200 || !strings.Contains(body, "foldermirror_test_total 0") {
		t.Errorf("metrics: %d %s", code, body)
	}
}

// /status has "push", what PushStatus gives, only when push is on.
func TestStatusOfPush(t *testing.T) {
	feeds := []push.FeedStatus{{Feed: "user:s@example.com", Libraries: []string{"eng"}, Polling: true, Reason: "Unauthorized WebHook callback channel"}}
	for _, tt := range []struct {
		name   string
		status func() []push.FeedStatus
		want   string // the push member, "" for none
	}{
		{"push off", nil, ""},
		{"push on", func() []push.FeedStatus { return feeds },
			`[{"feed":"user:s@example.com","libraries":["eng"],"accepted":0,"refused":0,"polling":true,"reason":"Unauthorized WebHook callback channel"}]`},
		{"push on, no feed", func() []push.FeedStatus { return []push.FeedStatus{} }, `[]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sc, idx := &scheduler{libraries: fm.NewLibrarySet([]fm.Library{{ID: "eng"}})}, &index{synced: map[string]bool{}}
			h := admin.New(admin.Options{Listen: "127.0.0.1:8081", Libraries: sc.libraries, Scheduler: sc, Index: idx, API: idx,
				Gatherer: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler), Push: pushOf(tt.status)}).Handler()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8081/status", nil))
			var st map[string]json.RawMessage
			if err := json.Unmarshal(rec.Body.Bytes(), &st); rec.Code != 200 || err != nil {
				t.Fatalf("status: %d %v %s", rec.Code, err, rec.Body)
			}
			var got string
			if raw, ok := st["push"]; ok {
				var compact bytes.Buffer
				if err := json.Compact(&compact, raw); err != nil {
					t.Fatal(err)
				}
				got = compact.String()
			}
			if got != tt.want || st["libraries"] == nil {
				t.Errorf("push %q, want %q, in %s", got, tt.want, rec.Body)
			}
		})
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
		resp, err := http.Post(srv.URL+"/sync?"+tc.query, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		var finals []string
		lines := bufio.NewScanner(resp.Body)
		for lines.Scan() && resp.StatusCode == http.StatusOK {
			var ev schedule.Event
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

// A state-changing request needs what a page of another site cannot send
// without a preflight: a JSON Content-Type or the RequestHeader.
func TestSyncRefusesCrossSiteRequests(t *testing.T) {
	srv, sc, _ := newServer(t)
	tests := []struct {
		name        string
		contentType string
		header      string
		body        string
		want        int
	}{
		{"no Content-Type", "", "", "", 403},
		{"text/plain, as a cross-site form or fetch sends it", "text/plain", "", "x", 403},
		{"a form", "application/x-www-form-urlencoded", "", "library=eng", 403},
		{"a multipart form", "multipart/form-data; boundary=x", "", "--x--", 403},
		{"JSON named loosely", "application/jsonp", "", "", 403},
		{"JSON", "application/json", "", "", 200},
		{"JSON with a charset", "application/json; charset=utf-8", "", "{}", 200},
		{"the header, any content", "text/plain", "foldermirror sync", "", 200},
		{"the header alone", "", "curl", "", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc.followed = nil
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/sync?library=eng", strings.NewReader(tt.body))
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			if tt.header != "" {
				req.Header.Set(admin.RequestHeader, tt.header)
			}
			status, body := do(t, req)
			if status != tt.want {
				t.Fatalf("status %d, want %d: %s", status, tt.want, body)
			}
			if tt.want == 403 {
				if len(sc.followed) != 0 {
					t.Errorf("a refused request started %v", sc.followed)
				}
				wantErrorBody(t, body, admin.RequestHeader)
			}
		})
	}
	// Reads need neither.
	if status, _ := get(t, srv.URL+"/status"); status != 200 {
		t.Errorf("GET /status: %d", status)
	}
}

// The Host header must name the listener: names an attacker could point at
// its address (DNS rebinding) are refused, whatever the method.
func TestHostMustNameTheListener(t *testing.T) {
	tests := []struct {
		adminListen string
		hosts       map[string]int
	}{
		{"127.0.0.1:8081", map[string]int{
			"127.0.0.1:8081": 200, "localhost:8081": 200, "LOCALHOST:8081": 200, "localhost.:8081": 200,
			"[::1]:8081": 200, "127.0.0.2:8081": 200, "localhost": 200, "127.0.0.1": 200, "[::1]": 200,
			"localhost:9000": 200, "": 200, // port forwarding; HTTP/1.0 without a Host
			"evil.example:8081": 421, "127.0.0.1.nip.io:8081": 421, "localhost.evil.example:8081": 421,
			"10.0.0.5:8081": 421, "evil.example": 421, "sub.localhost:8081": 421,
		}},
		{":8081", map[string]int{
			"10.0.0.5:8081": 200, "[fd00::5]:8081": 200, "192.168.1.7": 200, "localhost:8081": 200,
			"evil.example:8081": 421, "foldermirror.internal:8081": 421,
		}},
		{"0.0.0.0:8081", map[string]int{"10.0.0.5:8081": 200, "evil.example:8081": 421}},
		{"[::]:8081", map[string]int{"10.0.0.5:8081": 200, "[fd00::5]:8081": 200, "evil.example:8081": 421}},
		{"admin.internal:8081", map[string]int{
			"admin.internal:8081": 200, "Admin.Internal.:8081": 200, "localhost:8081": 200,
			"10.0.0.5:8081": 421, "evil.example:8081": 421, "admin.internal.evil.example:8081": 421,
		}},
		{"10.0.0.5:8081", map[string]int{"10.0.0.5:8081": 200, "127.0.0.1:8081": 200, "10.0.0.6:8081": 421, "evil.example:8081": 421}},
	}
	const token = "s3cret"
	for _, tt := range tests {
		h, _, _ := newHandler(t, tt.adminListen, token)
		for host, want := range tt.hosts {
			for _, method := range []string{http.MethodGet, http.MethodPost} {
				t.Run(tt.adminListen+" "+host+" "+method, func(t *testing.T) {
					req := httptest.NewRequest(method, "/status", nil)
					if method == http.MethodPost {
						req = httptest.NewRequest(method, "/sync?library=eng", nil)
						req.Header.Set("Content-Type", "application/json")
					}
					req.Host = host
					req.Header.Set("Authorization", "Bearer "+token)
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != want {
						t.Fatalf("status %d, want %d: %s", rec.Code, want, rec.Body)
					}
					if want == 421 {
						wantErrorBody(t, rec.Body.String(), host)
					}
				})
			}
		}
	}
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, body := fmtest.Do(t, req)
	return resp.StatusCode, string(body)
}

// wantErrorBody checks that body is the admin listener's JSON error and
// that its message mentions what.
func wantErrorBody(t *testing.T, body, what string) {
	t.Helper()
	var e struct{ Error string }
	if err := json.Unmarshal([]byte(body), &e); err != nil || !strings.Contains(e.Error, what) {
		t.Errorf("body %s; want {\"error\": ...} naming %q", body, what)
	}
}

// With adminTokenFile set, every request but GET /healthz and GET /readyz
// needs its token as a Bearer credential, else 401 in JSON; the probes stay
// open.
func TestAdminToken(t *testing.T) {
	const token = "s3cret-Token/42="
	h, sc, idx := newHandler(t, "127.0.0.1:8081", token)
	idx.synced["eng"] = true
	srv := httptest.NewServer(h)
	defer srv.Close()
	requests := []struct{ method, path string }{
		{http.MethodGet, "/status"},
		{http.MethodGet, "/metrics"},
		{http.MethodPost, "/sync?library=eng"},
		{http.MethodGet, "/nowhere"},
		{http.MethodPost, "/healthz"},
		{http.MethodGet, "/healthz/"},
	}
	credentials := []struct {
		name, header string
	}{
		{"none", ""},
		{"a wrong token", "Bearer s3cret-Token/43="},
		{"a prefix of the token", "Bearer s3cret"},
		{"the token and more", "Bearer " + token + "x"},
		{"the token without a scheme", token},
		{"another scheme", "Basic " + token},
		{"an empty bearer", "Bearer "},
	}
	for _, r := range requests {
		for _, c := range credentials {
			t.Run(r.method+" "+r.path+" "+c.name, func(t *testing.T) {
				sc.followed = nil
				req, _ := http.NewRequest(r.method, srv.URL+r.path, nil)
				req.Header.Set("Content-Type", "application/json")
				if c.header != "" {
					req.Header.Set("Authorization", c.header)
				}
				resp, body := fmtest.Do(t, req)
				if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
					resp.Header.Get("WWW-Authenticate") == "" {
					t.Fatalf("status %d, Content-Type %q, WWW-Authenticate %q: %s; want 401 JSON with a challenge",
						resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("WWW-Authenticate"), body)
				}
				wantErrorBody(t, string(body), "adminTokenFile")
				if strings.Contains(string(body), token) {
					t.Errorf("the answer shows the token: %s", body)
				}
				if len(sc.followed) != 0 {
					t.Errorf("a refused request started %v", sc.followed)
				}
			})
		}
	}
	authorized := func(method, path string) *http.Request {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		return req
	}
	for _, tt := range []struct {
		req  *http.Request
		want int
	}{
		{authorized(http.MethodGet, "/status"), 200},
		{authorized(http.MethodGet, "/metrics"), 200},
		{authorized(http.MethodPost, "/sync?library=eng"), 200},
		{authorized(http.MethodGet, "/nowhere"), 404},
	} {
		if status, body := do(t, tt.req); status != tt.want {
			t.Errorf("%s %s with the token: %d %s; want %d", tt.req.Method, tt.req.URL.Path, status, body, tt.want)
		}
	}
	// The probes need no token.
	for _, path := range []string{"/healthz", "/readyz"} {
		if status, body := get(t, srv.URL+path); status != 200 {
			t.Errorf("GET %s without a token: %d %s", path, status, body)
		}
		req, _ := http.NewRequest(http.MethodHead, srv.URL+path, nil)
		if status, _ := do(t, req); status != 200 {
			t.Errorf("HEAD %s without a token: %d", path, status)
		}
	}
}

// With a token, the probes tell a request without it their status only
// (with the HTTP status that goes with it): no library IDs, no database
// error, which may name its host, port, database and user. With the token,
// or on a listener without one, they tell the details.
func TestProbesTellDetailsWithTheToken(t *testing.T) {
	const token = "s3cret-Token/42="
	const problem = `failed to connect to host=db.internal user=fm database=fm: dial tcp 10.0.0.7:5432: connection refused`
	for _, tt := range []struct {
		name    string
		state   func(*index)
		status  int
		answer  string // the JSON status
		details []string
	}{
		{"waiting for the index", func(i *index) { i.down, i.problem = true, problem }, 503, "waiting for the index", []string{problem}},
		{"waiting for a library", func(*index) {}, 503, "waiting for a first sync, or for its catalog", []string{`"eng"`}},
		{"degraded", func(i *index) { i.synced["eng"], i.problem = true, problem }, 200, "degraded", []string{problem}},
		{"ready", func(i *index) { i.synced["eng"] = true }, 200, "ready", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			withToken, _, idx := newHandler(t, "0.0.0.0:8081", token)
			tt.state(idx)
			noToken, _, idx := newHandler(t, "127.0.0.1:8081", "")
			tt.state(idx)
			for _, c := range []struct {
				name          string
				h             http.Handler
				authorization string
				details       bool
			}{
				{"without the token", withToken, "", false},
				{"with a wrong token", withToken, "Bearer s3cret-Token/43=", false},
				{"with the token", withToken, "Bearer " + token, true},
				{"on a listener without a token", noToken, "", true},
			} {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8081/readyz", nil)
				if c.authorization != "" {
					req.Header.Set("Authorization", c.authorization)
				}
				c.h.ServeHTTP(rec, req)
				var got map[string]any
				if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != tt.status || got["status"] != tt.answer {
					t.Errorf("%s: %d %s; want %d and the status %q", c.name, rec.Code, rec.Body, tt.status, tt.answer)
				}
				for _, d := range tt.details {
					if shown := strings.Contains(rec.Body.String(), d); shown != c.details {
						t.Errorf("%s: %s; shows %s: %v, want %v", c.name, rec.Body, d, shown, c.details)
					}
				}
				if !c.details && len(got) != 1 {
					t.Errorf("%s: %s; want the status alone", c.name, rec.Body)
				}
			}
		})
	}
}

// With a token, GET /healthz?challenge=C answers the proof that the daemon
// holds it, HMAC-SHA256 keyed by the token of ProofLabel and C, so that
// foldermirror sync and healthcheck send the token only to its holder. A
// daemon without a token, or a request without a challenge, gets no proof,
// and none goes to a client that is not on the daemon's host.
func TestHealthzProvesTheToken(t *testing.T) {
	const token = "s3cret-Token/42="
	withToken, _, _ := newHandler(t, "0.0.0.0:8081", token)
	noToken, _, _ := newHandler(t, "127.0.0.1:8081", "")
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte("foldermirror admin listener holds the token\x00" + "n0nce"))
	want := hex.EncodeToString(mac.Sum(nil))
	for _, tt := range []struct {
		name        string
		h           http.Handler
		url, remote string
		proof       string
	}{
		{"over loopback", withToken, "http://127.0.0.1:8081/healthz?challenge=n0nce", "127.0.0.1:40000", want},
		{"from its own address", withToken, "http://192.0.2.1:8081/healthz?challenge=n0nce", "192.0.2.1:40000", want},
		{"from another host", withToken, "http://192.0.2.1:8081/healthz?challenge=n0nce", "192.0.2.9:40000", ""},
		{"no challenge", withToken, "http://127.0.0.1:8081/healthz", "127.0.0.1:40000", ""},
		{"no token", noToken, "http://127.0.0.1:8081/healthz?challenge=n0nce", "127.0.0.1:40000", ""},
	} {
		req := httptest.NewRequest(http.MethodGet, tt.url, nil)
		req.RemoteAddr = tt.remote
		local, _ := net.ResolveTCPAddr("tcp", req.URL.Host)
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, net.Addr(local)))
		rec := httptest.NewRecorder()
		tt.h.ServeHTTP(rec, req)
		var got struct{ Status, Service, Proof string }
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 200 || got.Service != admin.Service || got.Proof != tt.proof {
			t.Errorf("%s: %d %s; want 200, the service and the proof %q", tt.name, rec.Code, rec.Body, tt.proof)
		}
	}
	if got := admin.Proof(token, "n0nce"); got != want {
		t.Errorf("Proof = %s; want %s", got, want)
	}
}

// With many discovered libraries, /status lists the configured ones and
// counts the others, each told by /status?library=ID; /readyz waits for no
// discovered library never synced.
func TestStatusOfDiscoveredLibraries(t *testing.T) {
	h, sc, idx := newHandler(t, "127.0.0.1:8081", "")
	idx.synced["eng"] = true
	rule := fm.SharedDriveDiscovery{Domain: "example.com", StorageAccount: "storage@example.com"}
	var libs []fm.Library
	for i := range 150 {
		libs = append(libs, rule.Library(fm.DiscoveredDrive{ID: fmt.Sprintf("0Adrive%03d", i), Name: fmt.Sprintf("Drive %d", i)}))
	}
	sc.libraries.SetDiscovered("example.com", libs)
	serve := func(target string) (int, []byte) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8081"+target, nil))
		return rec.Code, rec.Body.Bytes()
	}
	code, body := serve("/status")
	var st admin.Status
	if err := json.Unmarshal(body, &st); code != 200 || err != nil {
		t.Fatalf("status: %d %v %s", code, err, body)
	}
	if len(st.Libraries) != 1 || st.Libraries[0].Name != "eng" || st.LibrariesNotListed != 150 {
		t.Errorf("status lists %d libraries and leaves %d out, want eng alone and 150", len(st.Libraries), st.LibrariesNotListed)
	}
	code, body = serve("/status?library=0Adrive007")
	var one admin.LibraryStatus
	if err := json.Unmarshal(body, &one); code != 200 || err != nil || !one.Discovered || one.LibraryName != "Drive 7" || one.Synced {
		t.Errorf("status?library=0Adrive007: %d %s", code, body)
	}
	if code, body := serve("/status?library=nope"); code != 404 || !strings.Contains(string(body), "No library is named nope.") {
		t.Errorf("status?library=nope: %d %s", code, body)
	}
	if code, body := serve("/readyz"); code != 200 {
		t.Errorf("readyz with discovered libraries never synced: %d %s", code, body)
	}
}

// feeds plays the push service whose feeds status gives.
type feeds func() []push.FeedStatus

func (f feeds) Status() []push.FeedStatus { return f() }

func (f feeds) Summary() push.FeedSummary {
	return push.FeedSummary{FeedCounts: push.FeedCounts{Feeds: len(f())}}
}

func (f feeds) LibraryFeedStatus(libraryID string) (push.FeedStatus, bool) {
	for _, st := range f() {
		if slices.Contains(st.Libraries, libraryID) {
			return st, true
		}
	}
	return push.FeedStatus{}, false
}

// pushOf returns the push service of status, nil (push off) for nil.
func pushOf(status func() []push.FeedStatus) admin.Push {
	if status == nil {
		return nil
	}
	return feeds(status)
}
