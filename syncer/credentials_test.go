package syncer_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// An authorized_user key acts as its own user, whatever storageAccount says:
// the library is read with that user's access.
func TestAuthorizedUserKey(t *testing.T) {
	t.Parallel()
	const carol = "carol@example.com"
	fake := startFake(t)
	fake.AddUser(carol)
	root := fake.CreateFolder(storage, "", "Eng")
	fake.CreateFolder(storage, root, "A")

	e := newEnv(t, fake, "id: eng, rootFolderId: "+root)
	if err := os.WriteFile(e.cfg.Storage.CredentialsFile, fake.AuthorizedUserKey(carol), 0o600); err != nil {
		t.Fatal(err)
	}
	e.restartSyncer()
	if _, err := e.s.Sync(context.Background(), fm.SyncRequest{Library: "eng", Mode: fm.SyncFull}, nil); err == nil {
		t.Fatal("synced a root the key's user cannot see")
	} else if want := "not shared with the user of the authorized_user key " + e.cfg.Storage.CredentialsFile; !strings.Contains(err.Error(), want) {
		t.Fatalf("a root the key's user cannot see: %v, want it to say %q", err, want)
	}
	fake.Share(root, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: carol})
	e.sync("eng")
	if got, want := e.tree("eng"), []string{"Eng", "A<Eng"}; !slices.Equal(got, want) {
		t.Errorf("tree:\n got %v\nwant %v", got, want)
	}
}
