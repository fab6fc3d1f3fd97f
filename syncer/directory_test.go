package syncer_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSyncDirectory(t *testing.T) {
	fake := startFake(t)
	for _, u := range []string{admin, "alice@example.com", "bob@example.com", "carol@example.com", "pat@partner.org"} {
		fake.AddUser(u)
	}
	fake.MakeAdmin(admin)
	fake.SuspendUser("carol@example.com", true)
	fake.AddGroup("sub@example.com", "bob@example.com", "pat@partner.org")
	fake.AddGroup("eng@example.com", "alice@example.com", "sub@example.com")
	fake.AddGroup("all@example.com", "eng@example.com", "carol@example.com")
	fake.AddGroup("loop-a@example.com", "loop-b@example.com", "alice@example.com")
	fake.AddGroup("loop-b@example.com", "loop-a@example.com")
	e := newEnv(t, fake)
	fake.ResetCalls()
	res, err := e.s.SyncDirectory(context.Background(), "example.com")
	if err != nil {
		t.Fatal(err)
	}
	if res.Users != 5 || res.Groups != 5 {
		t.Errorf("result %+v", res)
	}
	for _, tc := range []struct {
		email  string
		known  bool
		groups []string
	}{
		{"alice@example.com", true, []string{"all@example.com", "eng@example.com", "loop-a@example.com", "loop-b@example.com"}},
		{"bob@example.com", true, []string{"all@example.com", "eng@example.com", "sub@example.com"}},
		{"carol@example.com", false, []string{"all@example.com"}},
		{"pat@partner.org", false, []string{"all@example.com", "eng@example.com", "sub@example.com"}},
		{"storage@example.com", true, nil},
	} {
		known, groups, _ := e.db.Lookup(context.Background(), tc.email)
		if known != tc.known || !slices.Equal(groups, tc.groups) {
			t.Errorf("%s: known %v groups %v; want %v %v", tc.email, known, groups, tc.known, tc.groups)
		}
	}
	calls := fake.Calls()
	if calls["directory.users.list"] != 1 || calls["directory.groups.list"] != 1 || calls["directory.members.list"] != 5 {
		t.Errorf("calls %v", calls)
	}

	// A user removed from the directory is no longer known after the next sync.
	fake.RemoveUser("alice@example.com")
	if _, err := e.s.SyncDirectory(context.Background(), "example.com"); err != nil {
		t.Fatal(err)
	}
	if known, groups, _ := e.db.Lookup(context.Background(), "alice@example.com"); known || len(groups) != 0 {
		t.Errorf("removed alice: %v %v", known, groups)
	}
}

func TestSyncDirectoryRefused(t *testing.T) {
	fake := startFake(t)
	fake.AddUser(admin) // not made an admin
	e := newEnv(t, fake)
	_, err := e.s.SyncDirectory(context.Background(), "example.com")
	if err == nil || !strings.Contains(err.Error(), admin) || !strings.Contains(err.Error(), "Not Authorized") {
		t.Errorf("error %v; want it to name the admin and Google's refusal", err)
	}
	if _, err := e.s.SyncDirectory(context.Background(), "nope.org"); err == nil {
		t.Error("unconfigured domain synced")
	}
}

// Nested groups with storage.concurrency 1: reading the members of a group
// that has a nested one must not wait for a call slot its own reader holds.
func TestSyncDirectoryNestedGroupsConcurrencyOne(t *testing.T) {
	fake := startFake(t)
	for _, u := range []string{admin, "alice@example.com", "bob@example.com"} {
		fake.AddUser(u)
	}
	fake.MakeAdmin(admin)
	fake.AddGroup("c@example.com", "alice@example.com")
	fake.AddGroup("a@example.com", "c@example.com")
	fake.AddGroup("b@example.com", "bob@example.com")
	e := newEnv(t, fake)
	e.cfg.Storage.Concurrency = 1
	e.restartSyncer()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := e.s.SyncDirectory(ctx, "example.com")
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("directory sync still running after 10 s: deadlocked")
	}
	if _, groups, _ := e.db.Lookup(context.Background(), "alice@example.com"); !slices.Equal(groups, []string{"a@example.com", "c@example.com"}) {
		t.Errorf("alice's groups: %v", groups)
	}
}
