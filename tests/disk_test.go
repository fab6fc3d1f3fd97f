//go:build long

package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/index/bolt"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// TestFullAndReadOnlyDisk runs the binary on a data directory that fills up
// during a sync, then on one mounted read-only (a small tmpfs in a user and
// mount namespace of its own): each failure names the index file, and the
// index keeps what it had.
func TestFullAndReadOnlyDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if err := exec.Command("unshare", "-rm", "true").Run(); err != nil {
		t.Skipf("no user and mount namespaces here (%v): the full and read-only disk cases need them", err)
	}
	bin := buildBinary(t)
	fake := fmtest.StartGoogle(t)
	fake.AddUser(e2eStorage)
	small := fake.CreateFolder(e2eStorage, "", "Small")
	for i := range 20 {
		fake.CreateFolder(e2eStorage, small, fmt.Sprint("s", i))
	}
	big := fake.CreateFolder(e2eStorage, "", "Big")
	parents := []string{big}
	for i := range 6000 {
		id := fake.CreateFolder(e2eStorage, parents[i/10], fmt.Sprintf("a rather long folder name, number %d", i))
		fake.Share(id, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: fmt.Sprintf("someone%d@example.com", i)})
		parents = append(parents, id)
	}
	dir := t.TempDir()
	data, out := filepath.Join(dir, "data"), filepath.Join(dir, "out")
	os.MkdirAll(data, 0o755)
	os.MkdirAll(out, 0o755)
	c := fmtest.Config(t, fake, dir)
	c.Domains = []config.Domain{{Name: "example.com"}}
	c.Libraries = []config.Library{
		{ID: "small", Domain: "example.com", StorageAccount: e2eStorage, RootFolderID: small},
		{ID: "big", Domain: "example.com", StorageAccount: e2eStorage, RootFolderID: big},
	}
	cfg := fmtest.WriteConfig(t, c)

	script := fmt.Sprintf(`
mount -t tmpfs -o size=1536k tmpfs %[1]s || exit 3
%[2]s sync --config %[3]s --library small && echo SMALL_OK
%[2]s sync --config %[3]s --library big 2>%[4]s/full.err && echo FULL_OK || echo FULL_FAILED
cp %[1]s/index.db %[5]s/index.db
mount -o remount,ro %[1]s
%[2]s sync --config %[3]s --library small 2>%[4]s/ro.err && echo RO_OK || echo RO_FAILED
`, data, bin, cfg, dir, out)
	said, err := exec.Command("unshare", "-rm", "sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, said)
	}
	for _, want := range []string{"SMALL_OK", "FULL_FAILED", "RO_FAILED"} {
		if !strings.Contains(string(said), want) {
			t.Fatalf("want %s:\n%s", want, said)
		}
	}
	indexPath := filepath.Join(data, bolt.FileName)
	for file, cause := range map[string]string{"full.err": "no space left on device", "ro.err": "read-only file system"} {
		msg, _ := os.ReadFile(filepath.Join(dir, file))
		if !strings.Contains(string(msg), indexPath) || !strings.Contains(string(msg), cause) {
			t.Errorf("%s: %q; want it to name %s and say %q", file, msg, indexPath, cause)
		}
	}
	db, err := bolt.Open(out, quietLogger())
	if err != nil {
		t.Fatalf("the index after the full disk: %v", err)
	}
	defer db.Close()
	if st, err := db.Library(context.Background(), "small"); err != nil || st.Folders != 21 {
		t.Errorf("small after the full disk: %+v %v", st, err)
	}
	if _, err := db.Library(context.Background(), "big"); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("big half-written: %v", err)
	}
}
