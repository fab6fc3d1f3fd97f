package httpapi

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// aliceAuth authenticates every request as alice@example.com.
type aliceAuth struct{}

func (aliceAuth) Authenticate(*http.Request) (*auth.Identity, error) {
	return &auth.Identity{Email: "alice@example.com", Domain: "example.com", OrgDomain: "example.com", Method: auth.MethodGoogleIDToken}, nil
}

// slowIndex is a library of one folder, alice's, whose reading waits for
// release and honours its context.
type slowIndex struct {
	reading chan struct{} // closed when the library is first read
	once    sync.Once
	release chan struct{}
	reads   atomic.Int32
}

var aliceWriter = fm.NewPermissionSet([]fm.Permission{{ID: "a", Type: "user", Role: "writer", EmailAddress: "alice@example.com"}})

func (x *slowIndex) Library(context.Context, string) (*fm.LibraryState, error) {
	return &fm.LibraryState{ID: "lib", RootID: "root", Revision: 1}, nil
}

func (x *slowIndex) ReadLibrary(ctx context.Context, _ string, r fm.LibraryReader) (*fm.LibraryState, error) {
	x.reads.Add(1)
	x.once.Do(func() { close(x.reading) })
	select {
	case <-x.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := r.PermissionSet(aliceWriter); err != nil {
		return nil, err
	}
	if err := r.Folder(&fm.Folder{ID: "root", Name: "Root", PermissionSet: aliceWriter.Key}); err != nil {
		return nil, err
	}
	return x.Library(ctx, "lib")
}

func (x *slowIndex) Changes(ctx context.Context, _ string, _ uint64) (*fm.ChangeSet, error) {
	st, _ := x.Library(ctx, "lib")
	return &fm.ChangeSet{State: *st}, nil
}

func (x *slowIndex) PermissionSet(context.Context, string, fm.PermissionSetKey) ([]fm.Permission, error) {
	return aliceWriter.Permissions, nil
}

func newTestServer(t *testing.T, idx fm.IndexReader, logs *bytes.Buffer) *Server {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return New(idx, aliceAuth{}, Options{
		Libraries:               fm.NewLibrarySet([]fm.Library{{ID: "lib", Name: "Lib", Domain: "example.com", RootFolderID: "root"}}),
		CallerRequestsPerSecond: 1000, CallerBurst: 1000,
		Logger: logger, Metrics: NewMetrics(prometheus.NewRegistry()),
	})
}

// serve serves a request, and returns what it panicked with, if anything.
func serve(s *Server, w http.ResponseWriter, r *http.Request) (panicked any) {
	defer func() { panicked = recover() }()
	s.Handler().ServeHTTP(w, r)
	return nil
}

// A handler that panics gets a 500, and a response cut short (mid-way
// through, or by a stream that could not finish) still counts and is
// logged.
func TestPanicsAreCountedAndLogged(t *testing.T) {
	var logs bytes.Buffer
	s := newTestServer(t, &slowIndex{}, &logs)
	s.engine.GET("/panic", func(*gin.Context) { panic("boom") })
	s.engine.GET("/mid", func(c *gin.Context) {
		c.Writer.WriteString(`{"items":[`)
		panic("boom")
	})
	s.engine.GET("/cut", func(c *gin.Context) {
		c.Set(callerKey, newCaller(&auth.Identity{Email: "alice@example.com"}))
		out := s.newFolderStream(c)
		out.streaming, out.err = true, errors.New("the client left")
		s.finish(c, out)
	})
	for _, tc := range []struct {
		path     string
		status   string
		panicked any
	}{
		{"/panic", "500", nil},
		{"/mid", "200", http.ErrAbortHandler},
		{"/cut", "200", http.ErrAbortHandler},
	} {
		w := httptest.NewRecorder()
		if got := serve(s, w, httptest.NewRequest(http.MethodGet, tc.path, nil)); got != tc.panicked {
			t.Errorf("%s panicked with %v, want %v", tc.path, got, tc.panicked)
		}
		if tc.panicked == nil && w.Code != http.StatusInternalServerError {
			t.Errorf("%s: status %d, want 500", tc.path, w.Code)
		}
		if n := testutil.ToFloat64(s.metrics.requests.WithLabelValues(tc.path, tc.status)); n != 1 {
			t.Errorf("%s: requests_total{code=%q} = %v, want 1", tc.path, tc.status, n)
		}
		var d dto.Metric
		if err := s.metrics.duration.WithLabelValues(tc.path).(prometheus.Metric).Write(&d); err != nil || d.GetHistogram().GetSampleCount() != 1 {
			t.Errorf("%s: %d durations observed, want 1 (%v)", tc.path, d.GetHistogram().GetSampleCount(), err)
		}
		aborted := tc.panicked != nil
		want := "route=" + tc.path + " auth=\"\" status=" + tc.status
		if !strings.Contains(logs.String(), want) || strings.Contains(logs.String(), "aborted=true") != aborted {
			t.Errorf("%s: not logged as %s (aborted=%v):\n%s", tc.path, want, aborted, logs.String())
		}
		logs.Reset()
	}
}

// The request that started a catalog's build leaving does not fail the
// others waiting for it. In a synctest bubble: Wait returns once every
// request is blocked, so the second is waiting for the same build before
// the first leaves, and a build tied to the first's context has failed (and
// the second begun its own) before the index answers. (Were the catalog's
// update lock a sync.Mutex again, the first Wait would block until the
// test's timeout: a goroutine waiting on a mutex is not durably blocked.)
func TestCatalogBuildOutlivesItsFirstCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		idx := &slowIndex{reading: make(chan struct{}), release: make(chan struct{})}
		var logs bytes.Buffer
		s := newTestServer(t, idx, &logs)
		get := func(ctx context.Context) chan *httptest.ResponseRecorder {
			done := make(chan *httptest.ResponseRecorder, 1)
			go func() {
				w := httptest.NewRecorder()
				s.Handler().ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodGet, "/folder/v1/files/root", nil))
				done <- w
			}()
			return done
		}
		ctx, cancel := context.WithCancel(context.Background())
		first := get(ctx)
		<-idx.reading // the first request is building the catalog
		second := get(context.Background())
		synctest.Wait() // the second waits for the same build
		if n := idx.reads.Load(); n != 1 {
			t.Fatalf("the root was read %d times before the build ended, want once", n)
		}
		cancel()
		synctest.Wait() // a build under the first's context would have failed
		close(idx.release)
		w := <-second
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"fileId":"root"`) {
			t.Errorf("second caller: %d %s", w.Code, w.Body)
		}
		<-first
		if n := idx.reads.Load(); n != 1 {
			t.Errorf("the root was read %d times, want once (one shared build)", n)
		}
		if !s.Warmed(context.Background(), "lib") {
			t.Error("the catalog was not kept")
		}
		if want := "auth=" + auth.MethodGoogleIDToken + " status=200"; !strings.Contains(logs.String(), want) {
			t.Errorf("the request log lacks %s:\n%s", want, logs.String())
		}
	})
}
