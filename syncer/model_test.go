package syncer_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	drive "google.golang.org/api/drive/v3"
)

var modelSeeds = flag.Int("model-seeds", defaultModelSeeds, "random mutation sequences the model-based test runs (1, or 3 with -tags long, unless set)")

// TestIncrementalMatchesFullSync: seeded random sequences of hundreds of
// mutations in the fake; after each batch an incremental sync, and then the
// index must equal a fresh full sync of the same state, folder by folder and
// permission by permission (lists and own permissions), and each folder's
// list must be, in order, what Drive lists for it (a full sync could make
// the same mistake as the incremental one). It runs with the
// fake logging a change for every descendant a permission change or a move
// affects, as Drive does for My Drive, and with it logging the item alone,
// as Drive may: then descendants' lists are the sync's to make. Each seed
// keeps the incremental index on bbolt; seed 0 keeps it on PostgreSQL too
// (compared with full syncs into bbolt), in the item-alone mode every day,
// in both with -tags long. The everyday run runs one seed of each mode,
// seed 0 of the item-alone mode on PostgreSQL alone (on bbolt without a
// PostgreSQL server); -tags long three of each on bbolt. The subtests run
// at once with the package's other parallel tests.
func TestIncrementalMatchesFullSync(t *testing.T) {
	t.Parallel()
	for i, mode := range []struct {
		name  string
		alone bool
	}{{"item alone", true}, {"every item", false}} {
		onPostgres := i < modelPostgresModes && hasPostgres(t)
		for seed := range *modelSeeds {
			if seed == 0 && onPostgres && !modelSeed0OnBoth {
				continue // its run on PostgreSQL follows
			}
			t.Run(fmt.Sprintf("%s/seed %d", mode.name, seed), func(t *testing.T) {
				t.Parallel()
				runModel(t, fmtest.Bolt, uint64(seed), mode.alone)
			})
		}
		if onPostgres {
			t.Run(mode.name+"/postgres", func(t *testing.T) {
				t.Parallel()
				runModel(t, fmtest.Postgres, 0, mode.alone)
			})
		}
	}
}

// hasPostgres tells whether the PostgreSQL runs of a test run: whether
// fmtest.Backends has PostgreSQL (it logs that it does not otherwise).
func hasPostgres(t *testing.T) bool {
	return slices.Contains(fmtest.Backends(t), fmtest.Postgres)
}

// runModel runs one seeded sequence of mutations, the fake logging items
// alone or not, syncing incrementally into an index on backend.
func runModel(t *testing.T, backend string, seed uint64, alone bool) {
	m := newMutator(t, seed)
	m.fake.LogItemAlone(alone)
	libs := m.libraries()
	inc := newEnvOn(t, backend, m.fake, libs...)
	inc.sync("mydrive")
	inc.sync("shared")
	svc := fmtest.DriveAs(t, m.fake, storage)
	var inherited, reread int
	for batch := range 15 {
		for range 20 {
			m.mutate()
		}
		for _, lib := range []string{"mydrive", "shared"} {
			res, err := inc.s.Sync(context.Background(), fm.SyncRequest{Library: lib, Mode: fm.SyncAuto}, nil)
			if err != nil {
				t.Fatalf("batch %d: incremental sync of %s: %v", batch, lib, err)
			}
			if res.Full {
				t.Fatalf("batch %d: %s fell back to a full sync", batch, lib)
			}
			inherited, reread = inherited+res.Inherited, reread+res.Reread
			checkLibrary(t, fmt.Sprintf("batch %d, %s", batch, lib), inc, svc, libs, lib)
		}
		if t.Failed() {
			t.Fatalf("after batch %d; mutations so far:\n%s", batch, m.log)
		}
	}
	t.Logf("folders whose lists the syncs made: %d; read again from Drive: %d; accounts deleted: %d", inherited, reread, len(m.gone))
}

// checkLibrary compares a library of inc, as its incremental syncs left it,
// with a fresh full sync of the same state into a bbolt index of its own
// (libs configure it, as newEnv takes them), and with Drive's
// permissions.list, asked through svc.
func checkLibrary(t *testing.T, when string, inc *env, svc *drive.Service, libs []string, lib string) {
	t.Helper()
	fresh := newEnv(t, inc.fake, libs...)
	fresh.sync(lib)
	compareIndexes(t, when, inc, fresh, lib)
	compareWithDrive(t, when, inc, svc, lib)
}

func compareIndexes(t *testing.T, when string, got, want *env, lib string) {
	t.Helper()
	g, err := got.db.Snapshot(context.Background(), lib)
	if err != nil {
		t.Fatal(err)
	}
	w, err := want.db.Snapshot(context.Background(), lib)
	if err != nil {
		t.Fatal(err)
	}
	gm, wm := byID(g), byID(w)
	diffs := 0
	for id, wf := range wm {
		gf, ok := gm[id]
		switch {
		case !ok:
			t.Errorf("%s: folder %s (%q) missing after the incremental sync", when, id, wf.Name)
		case !reflect.DeepEqual(gf.Folder, wf.Folder):
			t.Errorf("%s: folder %s:\n incremental %+v\n full        %+v", when, id, gf.Folder, wf.Folder)
		case !reflect.DeepEqual(gf.Permissions, wf.Permissions):
			t.Errorf("%s: permissions of %s:\n incremental %+v\n full        %+v", when, id, gf.Permissions, wf.Permissions)
		default:
			continue
		}
		if diffs++; diffs > 5 {
			return
		}
	}
	for id, gf := range gm {
		if _, ok := wm[id]; !ok {
			t.Errorf("%s: folder %s (%q) kept by the incremental sync, not in a full sync", when, id, gf.Name)
		}
	}
	gs, _ := got.db.Library(context.Background(), lib)
	ws, _ := want.db.Library(context.Background(), lib)
	if gs.Folders != ws.Folders || gs.Permissions != ws.Permissions || gs.SharingRequiresOrganizer != ws.SharingRequiresOrganizer {
		t.Errorf("%s: state %+v, full sync's %+v", when, gs, ws)
	}
}

// compareWithDrive checks that each folder of a library lists, in order,
// the permissions Drive lists for it (deleted accounts' left out), asked of
// Drive through svc.
func compareWithDrive(t *testing.T, when string, e *env, svc *drive.Service, lib string) {
	t.Helper()
	snap, err := e.db.Snapshot(context.Background(), lib)
	if err != nil {
		t.Fatal(err)
	}
	diffs := 0
	for _, f := range snap {
		want := drivePermissions(t, svc, f.ID)
		if !slices.Equal(f.Permissions, want) {
			t.Errorf("%s: permissions of %s (%q), in order:\n index %s\n Drive %s", when, f.ID, f.Name, permissionIDs(f.Permissions), permissionIDs(want))
			if diffs++; diffs > 5 {
				return
			}
		}
	}
}

// drivePermissions returns the permissions Drive lists for a folder, in
// Drive's order, as the index keeps them (deleted accounts' left out).
func drivePermissions(t *testing.T, svc *drive.Service, id string) []fm.Permission {
	t.Helper()
	var out []fm.Permission
	err := svc.Permissions.List(id).SupportsAllDrives(true).PageSize(100).
		Fields("nextPageToken,permissions(id,type,role,emailAddress,domain,displayName,photoLink,allowFileDiscovery,deleted)").
		Pages(context.Background(), func(l *drive.PermissionList) error {
			for _, p := range l.Permissions {
				if !p.Deleted {
					out = append(out, fm.Permission{ID: p.Id, Type: p.Type, Role: p.Role, EmailAddress: p.EmailAddress, Domain: p.Domain,
						DisplayName: p.DisplayName, PhotoLink: p.PhotoLink, AllowFileDiscovery: p.AllowFileDiscovery})
				}
			}
			return nil
		})
	if err != nil {
		t.Fatalf("permissions.list of %s: %v", id, err)
	}
	return out
}

// permissionIDs shows a list as its permission IDs and roles, in order.
func permissionIDs(perms []fm.Permission) string {
	out := make([]string, len(perms))
	for i, p := range perms {
		out[i] = p.ID + "/" + p.Role
	}
	return fmt.Sprint(out)
}

func byID(folders []fm.SyncedFolder) map[string]fm.SyncedFolder {
	out := map[string]fm.SyncedFolder{}
	for _, f := range folders {
		if f.Permissions == nil {
			f.Permissions = []fm.Permission{}
		}
		out[f.ID] = f
	}
	return out
}

// mutator changes a fake's world at random.
type mutator struct {
	t       *testing.T
	rng     *rand.Rand
	fake    *googlefake.Server
	root    string // a My Drive library
	outside string // My Drive folders outside it
	drive   string // a shared-drive library
	// foreign is another domain's shared drive the storage account joins
	// and leaves (member: its permission there, "" when not a member).
	foreign, member string
	mine            []string // My Drive folders ever made
	shared          []string // shared-drive folders ever made
	perms           map[string][]string
	gone            map[string]bool // leavers whose account was deleted
	log             string
}

// users are shared with; the leavers among them may have their accounts
// deleted, and are shared with no more then.
var (
	users   = []string{"ann@example.com", "ben@example.com", "cat@example.com", "dov@partner.org", "eve@example.com", "fay@partner.org"}
	leavers = []string{"eve@example.com", "fay@partner.org"}
)

func newMutator(t *testing.T, seed uint64) *mutator {
	fake := startFake(t)
	fake.Seed(seed)
	for _, u := range users {
		fake.AddUser(u)
	}
	fake.AddGroup("team@example.com", "ann@example.com", "dov@partner.org")
	m := &mutator{t: t, rng: rand.New(rand.NewPCG(seed, 3)), fake: fake, perms: map[string][]string{}, gone: map[string]bool{}}
	m.root = fake.CreateFolder(storage, "", "Library")
	m.outside = fake.CreateFolder(storage, "", "Outside")
	m.drive = fake.CreateSharedDrive("Team", storage)
	m.foreign = fake.CreateSharedDrive("Partner", "olga@other.org")
	m.mine = []string{m.root, m.outside}
	m.shared = []string{m.drive}
	for range 60 {
		m.create()
	}
	return m
}

// libraries configures the libraries of m's world, as newEnv takes them:
// "mydrive", the My Drive folder root, and "shared", the shared drive.
func (m *mutator) libraries() []string {
	return []string{"id: mydrive, rootFolderId: " + m.root, "id: shared, sharedDriveId: " + m.drive}
}

func (m *mutator) pick(ids []string) string { return ids[m.rng.IntN(len(ids))] }

func (m *mutator) create() {
	if m.rng.IntN(3) == 0 {
		parent := m.pick(m.shared)
		m.shared = append(m.shared, m.fake.CreateFolder(storage, parent, m.name()))
		return
	}
	parent := m.pick(m.mine)
	m.mine = append(m.mine, m.fake.CreateFolder(storage, parent, m.name()))
}

func (m *mutator) name() string {
	return []string{"a", "B", "c", "Ä", "projects", "Projects", "x y"}[m.rng.IntN(7)] + fmt.Sprint(m.rng.IntN(5))
}

func (m *mutator) grant() googlefake.Permission {
	p := googlefake.Permission{Role: []string{"reader", "commenter", "writer"}[m.rng.IntN(3)], AllowFileDiscovery: m.rng.IntN(2) == 0}
	switch m.rng.IntN(4) {
	case 0:
		p.Type, p.EmailAddress = "user", m.pick(slices.DeleteFunc(slices.Clone(users), func(u string) bool { return m.gone[u] }))
	case 1:
		p.Type, p.EmailAddress = "group", "team@example.com"
	case 2:
		p.Type, p.Domain = "domain", "example.com"
	default:
		p.Type = "anyone"
	}
	return p
}

// mutate applies one random change. Changes the fake refuses (moving a
// folder into itself, touching a deleted one) are skipped.
func (m *mutator) mutate() {
	defer func() {
		if r := recover(); r != nil {
			m.log += fmt.Sprintf("  (skipped: %v)\n", r)
		}
	}()
	pool := m.mine
	if m.rng.IntN(3) == 0 {
		pool = m.shared
	}
	id := m.pick(pool)
	movable := !slices.Contains([]string{m.root, m.outside, m.drive}, id) // roots stay
	switch op := m.rng.IntN(15); op {
	case 0, 1:
		m.create()
		m.log += "create\n"
	case 2:
		m.fake.Rename(id, m.name())
		m.log += "rename " + id + "\n"
	case 3, 4:
		if !movable {
			return
		}
		to := m.pick(pool)
		m.log += "move " + id + " to " + to + "\n"
		m.fake.Move(id, to)
	case 5:
		if !movable {
			return
		}
		m.log += "trash " + id + "\n"
		m.fake.Trash(id)
	case 6:
		m.log += "untrash " + id + "\n"
		m.fake.Untrash(id)
	case 7:
		if movable && m.rng.IntN(3) == 0 {
			m.log += "delete " + id + "\n"
			m.fake.Delete(id)
		}
	case 8, 9:
		m.log += "share " + id + "\n"
		m.perms[id] = append(m.perms[id], m.fake.Share(id, m.grant()))
	case 10:
		if ps := m.perms[id]; len(ps) > 0 {
			m.log += "unshare " + id + "\n"
			m.perms[id] = ps[1:]
			m.fake.Unshare(id, ps[0])
		}
	case 11:
		m.log += "modify " + id + "\n"
		m.modify(id)
	case 12:
		if u := leavers[m.rng.IntN(len(leavers))]; !m.gone[u] && m.rng.IntN(8) == 0 {
			m.log += "delete the account of " + u + "\n"
			m.gone[u] = true
			m.fake.RemoveUser(u)
		}
	case 13:
		m.joinOrLeave()
	case 14:
		d := m.pick([]string{m.drive, m.foreign})
		m.log += "rename the drive " + d + "\n"
		m.fake.Rename(d, m.name())
	}
}

// joinOrLeave adds the storage account to another domain's shared drive, or
// removes it: Drive's feed of the account says so, in a "drive" change,
// which concerns no library of the account's.
func (m *mutator) joinOrLeave() {
	if m.member != "" {
		m.log += "the storage account leaves " + m.foreign + "\n"
		m.fake.Unshare(m.foreign, m.member)
		m.member = ""
		return
	}
	m.log += "the storage account joins " + m.foreign + "\n"
	m.member = m.fake.Share(m.foreign, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: storage})
}

func (m *mutator) modify(id string) {
	if id == m.drive {
		m.fake.ModifyDrive(id, func(d *drive.Drive) {
			d.Restrictions = &drive.DriveRestrictions{
				SharingFoldersRequiresOrganizerPermission: m.rng.IntN(2) == 0,
				CopyRequiresWriterPermission:              m.rng.IntN(3) == 0,
			}
		})
		return
	}
	m.fake.Modify(id, func(f *googlefake.File) {
		switch m.rng.IntN(4) {
		case 0:
			f.CopyRequiresWriterPermission = !f.CopyRequiresWriterPermission
		case 1:
			f.DownloadRestrictedForReaders = !f.DownloadRestrictedForReaders
		case 2:
			f.WritersCanShare = !f.WritersCanShare
		default:
			f.AppProperties = map[string]string{"folderDefinitionId": m.name()}
		}
	})
}
