package syncer_test

import (
	"context"
	"slices"
	"strings"
	"testing"
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
