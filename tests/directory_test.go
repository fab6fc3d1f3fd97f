package tests

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Two configured domains in two Workspace organisations, a group of each
// nested in the other's, and a group of a third organisation that neither
// admin may read: `foldermirror sync` succeeds and says which group it
// could not read, the daemon serves what the nested groups grant and shows
// the unreadable group in /status and /metrics, and a user removed from the
// directory loses access at the next sync.
func TestSyncDirectoriesAcrossOrganizations(t *testing.T) {
	t.Parallel()
	fake := fmtest.StartGoogle(t) // closed after the daemon
	fake.AddOrganization("alpha.example")
	fake.AddOrganization("beta.example")
	for _, u := range []string{"admin@alpha.example", "ann@alpha.example", "admin@beta.example", "bob@beta.example",
		"bea@beta.example", "storage@beta.example", "gus@gamma.org"} {
		fake.AddUser(u)
	}
	fake.MakeAdmin("admin@alpha.example")
	fake.MakeAdmin("admin@beta.example")
	fake.AddGroup("crew@beta.example", "bea@beta.example")
	fake.AddGroup("leads@alpha.example", "ann@alpha.example", "crew@beta.example")
	fake.AddGroup("outside@gamma.org", "gus@gamma.org")
	fake.AddGroup("eng@beta.example", "bob@beta.example", "leads@alpha.example", "outside@gamma.org")
	root := fake.CreateFolder("storage@beta.example", "", "Beta")
	shared := fake.CreateFolder("storage@beta.example", root, "Engineering")
	fake.Share(shared, googlefake.Permission{Type: "group", Role: "reader", EmailAddress: "eng@beta.example"})

	c := fmtest.Config(t, fake, t.TempDir())
	adminAddr := freePort(t)
	c.AdminListen = adminAddr
	c.Domains = []config.Domain{
		{Name: "alpha.example", AdminEmail: "admin@alpha.example"},
		{Name: "beta.example", AdminEmail: "admin@beta.example"},
	}
	c.Libraries = []config.Library{{ID: "beta", Name: "Beta", Domain: "beta.example", StorageAccount: "storage@beta.example", RootFolderID: root}}
	path := fmtest.WriteConfig(t, c)

	r := runBinary(t, "sync", "--config", path)
	if r.code != 0 {
		t.Fatalf("sync: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "outside@gamma.org") || !strings.Contains(r.stdout, "directory:alpha.example: ") {
		t.Errorf("sync said:\n%s\n%s", r.stdout, r.stderr)
	}

	base := startServe(t, path).api
	adminBase := "http://" + adminAddr
	waitForDirectories(t, adminBase, 2)
	ann, bob := fake.GoogleIDToken(e2eClient, "ann@alpha.example"), fake.GoogleIDToken(e2eClient, "bob@beta.example")
	bea := fake.GoogleIDToken(e2eClient, "bea@beta.example")
	for _, token := range []string{ann, bob, bea} {
		getJSON(t, base+"/folder/v1/files/"+shared, token, 200, nil)
	}
	// The directory sync keeps each user's ID: bob's access token is his,
	// those of a consumer Google account sharing his address are refused.
	const email = "https://www.googleapis.com/auth/userinfo.email"
	getJSON(t, base+"/folder/v1/files/"+shared, fake.GoogleAccessToken(e2eClient, "bob@beta.example", time.Hour, email), 200, nil)
	for _, consumer := range []string{fake.ConsumerAccessToken(e2eClient, "bob@beta.example", time.Hour, email),
		fake.GoogleIDToken(e2eClient, "bob@beta.example", googlefake.ConsumerAccount())} {
		getJSON(t, base+"/folder/v1/files/"+shared, consumer, 401, nil)
	}
	status := getJSON(t, adminBase+"/status", "", 200, nil)
	var st struct {
		Directories []struct {
			Name     string
			LastFull struct{ UnreadableGroups []string }
		}
	}
	if err := json.Unmarshal(status, &st); err != nil {
		t.Fatal(err)
	}
	for _, d := range st.Directories {
		want := map[string][]string{"directory:beta.example": {"outside@gamma.org"}}[d.Name]
		if !slices.Equal(d.LastFull.UnreadableGroups, want) {
			t.Errorf("/status of %s: unreadable groups %v, want %v", d.Name, d.LastFull.UnreadableGroups, want)
		}
	}
	const unreadable = `# HELP foldermirror_directory_unreadable_groups Groups nested in a domain's groups that its admin may not read (another organisation's, or gone), as of its last directory sync: they contribute no members.
# TYPE foldermirror_directory_unreadable_groups gauge
foldermirror_directory_unreadable_groups{domain="alpha.example"} 0
foldermirror_directory_unreadable_groups{domain="beta.example"} 1
`
	if err := testutil.ScrapeAndCompare(adminBase+"/metrics", strings.NewReader(unreadable), "foldermirror_directory_unreadable_groups"); err != nil {
		t.Errorf("/metrics: %v", err)
	}

	// Ann leaves alpha.example, crew leaves leads: after the next sync
	// (through the daemon), ann is no longer a known user and bea no longer
	// reaches the folder through alpha's group.
	fake.RemoveUser("ann@alpha.example")
	fake.RemoveGroupMember("leads@alpha.example", "crew@beta.example")
	if r := runBinary(t, "sync", "--config", path); r.code != 0 || !strings.Contains(r.stderr, "asking it") {
		t.Fatalf("sync through the daemon: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	getJSON(t, base+"/folder/v1/files/"+shared, ann, 401, nil)
	getJSON(t, base+"/folder/v1/files/"+shared, bea, 404, nil)
	getJSON(t, base+"/folder/v1/files/"+shared, bob, 200, nil)
}

// waitForDirectories waits until the daemon's status shows n directories
// synced since it started.
func waitForDirectories(t *testing.T, adminBase string, n int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(adminBase + "/status")
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			Directories []struct{ LastFull *struct{} }
		}
		err = json.NewDecoder(resp.Body).Decode(&st)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		synced := 0
		for _, d := range st.Directories {
			if d.LastFull != nil {
				synced++
			}
		}
		if err == nil && synced == n {
			return
		}
	}
	t.Fatalf("the daemon did not sync %d directories within 20 s", n)
}
