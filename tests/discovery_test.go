package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/discovery"
	"github.com/foldermirror/foldermirror/httpapi/admin"
	"github.com/foldermirror/foldermirror/index/postgres"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// The tests of shared drives found by themselves (DESIGN §10): drives the
// storage account e2eStorage is a member of, organized by driveOrganizer,
// who sees every folder of them.

const (
	discoveringDomain = "example.com"
	driveOrganizer    = "alice@example.com"
)

// sharedDrive is a shared drive made in the fake: its ID (its root's, and
// its library's), its folders in the order operation 6 on the root lists
// them, and the storage account's permission once a member.
type sharedDrive struct {
	id, name string
	folders  []string
	member   string
}

// newDriveFake returns a fake with the storage account and the users the
// tests read as.
func newDriveFake(t *testing.T) *googlefake.Server {
	t.Helper()
	fake := fmtest.StartGoogle(t)
	for _, u := range []string{e2eStorage, driveOrganizer, "bob@example.com"} {
		fake.AddUser(u)
	}
	return fake
}

// createDrive makes a shared drive of n folders at its root, of which the
// storage account is not a member yet.
func createDrive(fake *googlefake.Server, name string, n int) *sharedDrive {
	d := &sharedDrive{id: fake.CreateSharedDrive(name, driveOrganizer), name: name}
	for i := range n {
		d.folders = append(d.folders, fake.CreateFolder(driveOrganizer, d.id, fmt.Sprintf("%s %02d", name, i)))
	}
	return d
}

// join adds the storage account to the drive, as a reader.
func (d *sharedDrive) join(fake *googlefake.Server) *sharedDrive {
	d.member = fake.Share(d.id, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: e2eStorage})
	return d
}

// leave removes the storage account from the drive.
func (d *sharedDrive) leave(fake *googlefake.Server) { fake.Unshare(d.id, d.member) }

// discoveryConfig is the configuration of a daemon against fake on
// backend whose domain discovers the shared drives of the storage account,
// and that names no library.
func discoveryConfig(t *testing.T, fake *googlefake.Server, backend string) *config.Config {
	t.Helper()
	c := testConfig(t, fake, backend)
	c.Domains = []config.Domain{{Name: discoveringDomain, Users: []string{driveOrganizer, "bob@example.com"},
		SharedDrives: &config.SharedDrives{StorageAccount: e2eStorage}}}
	return c
}

// children GETs operation 6 on a folder, as the drives' organizer, from
// the API at base: its status, and the IDs of the folder's direct children
// when it is 200.
func children(t *testing.T, fake *googlefake.Server, base, folder string) (int, []string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/folder/v1/files/"+folder+"/children?onlyDirectChildren=true", nil)
	req.Header.Set("Authorization", "Bearer "+fake.GoogleIDToken(e2eClient, driveOrganizer))
	resp, body := fmtest.Do(t, req)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	var list struct{ Items []tree }
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("operation 6 on %s: %v", folder, err)
	}
	ids := []string{}
	for _, it := range list.Items {
		ids = append(ids, it.ID)
	}
	return http.StatusOK, ids
}

// servesDrive tells whether the API at base answers operation 6 on the
// drive's root with its folders.
func servesDrive(t *testing.T, fake *googlefake.Server, base string, d *sharedDrive) bool {
	t.Helper()
	status, ids := children(t, fake, base, d.id)
	return status == http.StatusOK && slices.Equal(ids, d.folders)
}

// waitServed waits until the API at base serves the drive's folders.
func waitServed(t *testing.T, fake *googlefake.Server, base string, d *sharedDrive) {
	t.Helper()
	waitUntil(t, 30*time.Second, base+" serving the folders of "+d.name, func() bool { return servesDrive(t, fake, base, d) })
}

// waitGone waits until the API at base answers 404 for the drive, in
// operation 6 on its root and in operation 3.
func waitGone(t *testing.T, fake *googlefake.Server, base string, d *sharedDrive) {
	t.Helper()
	token := fake.GoogleIDToken(e2eClient, driveOrganizer)
	req, _ := http.NewRequest(http.MethodGet, base+"/folder/v1/libraries/"+d.id+"/folders", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	waitUntil(t, 30*time.Second, base+" answering 404 for "+d.name, func() bool {
		status, _ := children(t, fake, base, d.id)
		resp, _ := fmtest.Do(t, req)
		return status == http.StatusNotFound && resp.StatusCode == http.StatusNotFound
	})
}

// adminStatus reads a daemon's /status (adminURL, its base URL).
func adminStatus(t *testing.T, adminURL string) admin.Status {
	t.Helper()
	var st admin.Status
	getJSON(t, adminURL+"/status", "", http.StatusOK, &st)
	return st
}

// domainDiscovery returns the discovery of the discovering domain in a
// daemon's /status, failing the test if there is none.
func domainDiscovery(t *testing.T, adminURL string) discovery.DomainStatus {
	t.Helper()
	st := adminStatus(t, adminURL)
	if len(st.Discovery) != 1 || st.Discovery[0].Domain != discoveringDomain {
		t.Fatalf("/status's discovery is %+v; want the domain %s's", st.Discovery, discoveringDomain)
	}
	return st.Discovery[0]
}

// waitDiscoveredAfter waits until a daemon's /status shows a discovery that
// ended after since, and returns it.
func waitDiscoveredAfter(t *testing.T, adminURL string, since time.Time) discovery.DomainStatus {
	t.Helper()
	var d discovery.DomainStatus
	waitUntil(t, 30*time.Second, "a discovery after "+since.Format(time.RFC3339Nano), func() bool {
		d = domainDiscovery(t, adminURL)
		return d.LastDiscovery.After(since)
	})
	return d
}

// heldLists is a front of the fake's Drive API that holds each
// drives.list until released, and lets every other call through: a
// discovery that started and cannot end until the test says so.
type heldLists struct {
	url     string        // base URL: Storage.Endpoint is url + "/drive/v3/"
	arrived chan struct{} // closed once a drives.list waits
	open    chan struct{} // closed by release
	lists   atomic.Int64  // drives.list calls that arrived
	once    struct{ arrived, open sync.Once }
}

// holdDrivesList starts a heldLists in front of fake, stopped when the test
// ends.
func holdDrivesList(t *testing.T, fake *googlefake.Server) *heldLists {
	t.Helper()
	h := &heldLists{arrived: make(chan struct{}), open: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/drive/v3/drives" {
			h.lists.Add(1)
			h.once.arrived.Do(func() { close(h.arrived) })
			select {
			case <-h.open:
			case <-r.Context().Done():
				return
			}
		}
		fake.ServeHTTP(w, r)
	}))
	h.url = srv.URL
	t.Cleanup(func() {
		h.release()
		srv.Close()
	})
	return h
}

// release lets the drives.list held, and every one after, through.
func (h *heldLists) release() { h.once.open.Do(func() { close(h.open) }) }

// waitHeld waits until a drives.list is held.
func (h *heldLists) waitHeld(t *testing.T) {
	t.Helper()
	select {
	case <-h.arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("no drives.list in 30 s: the daemon never discovered its drives")
	}
}

// runUntilServed starts a daemon of the configuration at path, waits until
// it serves every drive, and stops it: the index then holds the drives
// discovered and synced.
func runUntilServed(t *testing.T, fake *googlefake.Server, path string, drives ...*sharedDrive) {
	t.Helper()
	p := startServe(t, path)
	for _, d := range drives {
		waitServed(t, fake, p.api, d)
	}
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("serve stopped with %v", err)
	}
}

// A restarted daemon serves the drives discovered before while its first
// discovery has not ended; when that discovery fails, /status says why and
// the drives are still served.
func TestDiscoveryRestart(t *testing.T) {
	t.Parallel()
	fake := newDriveFake(t)
	drives := []*sharedDrive{createDrive(fake, "Research", 3).join(fake), createDrive(fake, "Sales", 2).join(fake)}
	path := fmtest.WriteConfig(t, discoveryConfig(t, fake, fmtest.Bolt))
	runUntilServed(t, fake, path, drives...)

	held := holdDrivesList(t, fake)
	fmtest.EditConfig(t, path, func(c *config.Config) { c.Storage.Endpoint = held.url + "/drive/v3/" })
	fake.LoopDrivePages(true) // the discovery, once let through, fails
	p := startServe(t, path)
	held.waitHeld(t)
	waitReady(t, p.admin+"/readyz")
	for _, d := range drives {
		if !servesDrive(t, fake, p.api, d) {
			t.Errorf("%s is not served while the first discovery runs", d.name)
		}
	}
	before := domainDiscovery(t, p.admin)
	if before.Found != len(drives) || before.LastError != "" {
		t.Errorf("/status's discovery before the first ends: %+v; want the %d drives found before the restart", before, len(drives))
	}

	held.release()
	after := waitDiscoveredAfter(t, p.admin, before.LastDiscovery)
	if !strings.Contains(after.LastError, "lead back") || after.Found != len(drives) {
		t.Errorf("/status's discovery after it failed: %+v; want Drive's looping pages named, and the %d drives kept", after, len(drives))
	}
	for _, d := range drives {
		if !servesDrive(t, fake, p.api, d) {
			t.Errorf("%s is not served after the discovery failed", d.name)
		}
	}
	const gauge = `foldermirror_discovered_libraries{domain="example.com"}`
	if got := metric(t, p.admin, gauge); got != float64(len(drives)) {
		t.Errorf("%s %v, want %d", gauge, got, len(drives))
	}
}

// A configuration that excludes a discovered drive takes it out at start:
// 404 before the first discovery ends; that discovery has its rows
// deleted.
func TestDiscoveryExcludedByANewConfiguration(t *testing.T) {
	t.Parallel()
	fake := newDriveFake(t)
	kept, excluded := createDrive(fake, "Research", 2).join(fake), createDrive(fake, "Legal", 2).join(fake)
	c := discoveryConfig(t, fake, fmtest.Bolt)
	path := fmtest.WriteConfig(t, c)
	runUntilServed(t, fake, path, kept, excluded)

	held := holdDrivesList(t, fake)
	fmtest.EditConfig(t, path, func(cfg *config.Config) {
		cfg.Storage.Endpoint = held.url + "/drive/v3/"
		cfg.Domains[0].SharedDrives.Exclude = []string{"Leg*"}
		cfg.Schedule.Incremental = "@every 1s" // discoveries follow one another
	})
	p := startServe(t, path)
	held.waitHeld(t)
	waitServed(t, fake, p.api, kept)
	if status, _ := children(t, fake, p.api, excluded.id); status != http.StatusNotFound {
		t.Errorf("the excluded drive answers %d before the first discovery ends, want 404", status)
	}
	getJSON(t, p.admin+"/status?library="+excluded.id, "", http.StatusNotFound, nil)

	held.release()
	// The discoveries run one after the other: a second drives.list means
	// the first discovery, and the deletions it asked for, are done.
	waitUntil(t, 30*time.Second, "a second discovery", func() bool { return held.lists.Load() >= 2 })
	if d := domainDiscovery(t, p.admin); d.Found != 2 || d.Included != 1 || d.Excluded != 1 || d.LastError != "" {
		t.Errorf("/status's discovery %+v; want 2 drives found, 1 included, 1 excluded", d)
	}
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("serve stopped with %v", err)
	}
	db := fmtest.OpenBolt(t, c.DataDir)
	if _, err := db.Library(context.Background(), excluded.id); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("the excluded drive's library in the index: %v, want %s", err, fm.ENOTFOUND)
	}
	if _, err := db.Library(context.Background(), kept.id); err != nil {
		t.Errorf("the drive kept lost its rows: %v", err)
	}
}

// `foldermirror sync --library DRIVE_ID` syncs a discovered drive: through
// the running daemon, and by itself with the daemon stopped; an ID that is
// neither configured nor discovered is refused, saying so.
func TestSyncDiscoveredLibrary(t *testing.T) {
	t.Parallel()
	fake := newDriveFake(t)
	research, sales := createDrive(fake, "Research", 3).join(fake), createDrive(fake, "Sales", 2).join(fake)
	c := discoveryConfig(t, fake, fmtest.Bolt)
	c.AdminListen = freePort(t)
	path := fmtest.WriteConfig(t, c)
	p := startServe(t, path)
	waitServed(t, fake, p.api, research)
	waitServed(t, fake, p.api, sales)
	folders := fmt.Sprintf("%d folders", 1+len(research.folders)) // and its root

	r := runBinary(t, "sync", "--config", path, "--library", research.id, "--full")
	if r.code != 0 || !strings.Contains(r.stderr, "asking it") ||
		!strings.Contains(r.stdout, research.id+": full sync (asked): "+folders) || strings.Contains(r.stdout, sales.id) {
		t.Errorf("sync of a discovered drive through the daemon: exit %d\n%s", r.code, r.said())
	}
	r = runBinary(t, "sync", "--config", path, "--library", "nope")
	if r.code != 1 || !strings.Contains(r.stderr, "no library nope") {
		t.Errorf("sync of an unknown library through the daemon: exit %d\n%s", r.code, r.said())
	}

	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("serve stopped with %v", err)
	}
	r = runBinary(t, "sync", "--config", path, "--library", research.id, "--full")
	if r.code != 0 || strings.Contains(r.stderr, "asking it") ||
		!strings.Contains(r.stdout, research.id+": full sync (asked): "+folders) || strings.Contains(r.stdout, sales.id) {
		t.Errorf("sync of a discovered drive with the daemon stopped: exit %d\n%s", r.code, r.said())
	}
	r = runBinary(t, "sync", "--config", path, "--library", "nope")
	if want := "--library nope: no such library in " + path + ", nor a shared drive discovered"; r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("sync of an unknown library with the daemon stopped: exit %d\n%s\nwant %q", r.code, r.said(), want)
	}
}

// startDiscoveringReplicas starts n serve processes of c, whose index is
// PostgreSQL, one after the other, each once the one before has ended its
// discovery at start and given the storage account's discovery lease
// back: each then lists the drives at its start, and none lists them
// later but for a reason the test gives. The first listens on c.Listen
// (where push.address points, if set), the others on ports of their own.
func startDiscoveringReplicas(t *testing.T, c *config.Config, n int) []*process {
	t.Helper()
	replicas := make([]*process, n)
	var last time.Time
	for i := range replicas {
		r := *c
		if i > 0 {
			r.Listen = "127.0.0.1:0"
		}
		r.DataDir = filepath.Join(t.TempDir(), "data")
		r.Path = filepath.Join(t.TempDir(), "config.yaml")
		replicas[i] = startServe(t, fmtest.WriteConfig(t, &r))
		last = waitDiscoveredAfter(t, replicas[i].admin, last).LastDiscovery
		waitUntil(t, 30*time.Second, "the discovery lease given back", func() bool {
			_, held := adminStatus(t, replicas[i].admin).Index.Leases[fm.DiscoveryLease(e2eStorage)]
			return !held
		})
	}
	for _, p := range replicas {
		waitReady(t, p.admin+"/readyz")
	}
	return replicas
}

// followedIndex opens the PostgreSQL index at url and follows what the
// processes that share it commit (Watch), as a replica does, until the
// test ends.
func followedIndex(t *testing.T, url string) *postgres.DB {
	t.Helper()
	db := fmtest.OpenPostgres(t, url, postgres.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.Watch(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return db
}

// Replicas on one PostgreSQL database, push on: a drive the storage
// account is added to is listed by one replica, the one Drive notified,
// and served by all; the account removed from it, every replica answers
// 404 for it, and its rows are deleted from the index.
func TestDiscoveryReplicas(t *testing.T) {
	t.Parallel()
	fake := newDriveFake(t)
	c := withPush(t, fake, discoveryConfig(t, fake, fmtest.Postgres))
	replicas := startDiscoveringReplicas(t, c, 3)
	waitPushed(t, replicas[0].admin)

	fake.ResetCalls()
	d := createDrive(fake, "Research", 3).join(fake)
	for _, p := range replicas {
		waitServed(t, fake, p.api, d)
		var st admin.LibraryStatus
		getJSON(t, p.admin+"/status?library="+d.id, "", http.StatusOK, &st)
		if !st.Discovered || st.LibraryName != d.name || st.Domain != discoveringDomain {
			t.Errorf("%s/status?library=%s: %+v; want the discovered library %s of %s", p.admin, d.id, st, d.name, discoveringDomain)
		}
	}
	if n := fake.CallCount("drive.drives.list"); n != 1 {
		t.Errorf("the drive added was listed by %d drives.list calls; want 1, the notified replica's", n)
	}

	fake.ResetCalls()
	d.leave(fake)
	for _, p := range replicas {
		waitGone(t, fake, p.api, d)
		getJSON(t, p.admin+"/status?library="+d.id, "", http.StatusNotFound, nil)
	}
	db := followedIndex(t, c.Index.URL)
	waitUntil(t, 30*time.Second, "the rows of the drive left deleted", func() bool {
		_, err := db.Library(context.Background(), d.id)
		return fm.ErrorCode(err) == fm.ENOTFOUND
	})
	if n := fake.CallCount("drive.drives.list"); n != 1 {
		t.Errorf("the drive left was found gone by %d drives.list calls; want 1, the notified replica's", n)
	}
}
