package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/demo"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/foldermirror/foldermirror/internal/wire"
	"github.com/foldermirror/foldermirror/push"
	"github.com/foldermirror/foldermirror/schedule"
	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"
)

// demoCommand runs a generated domain in an in-process Google fake, syncs
// it, serves it, and prints requests to try as several users.
type demoCommand struct {
	stdout, stderr io.Writer
	listen         string
	adminListen    string
	logLevel       string
	folders        int

	listeners *listeners // until the daemon serves them
	fake      *googlefake.Server
	dir       string
	daemon    *daemonParts
	// control serves the demo's controls over its Drive (demo.Control),
	// on loopback.
	control *server
}

// demoPushPath is the path, on the demo's API listener, where its fake
// posts Drive's notifications (push.address).
const demoPushPath = "/drive/push"

// demoPushWait bounds how long the demo waits for its fake to accept the
// push channels before it prints its instructions.
const demoPushWait = 10 * time.Second

// stopping says, under "Press Ctrl-C to stop.", that the demo stops, and
// the signal that stops it.
func (c *demoCommand) stopping(why error) {
	var sig signalReceived
	if errors.As(why, &sig) {
		fmt.Fprintf(c.stdout, "\n%v: stopping the demo\n", sig)
		return
	}
	fmt.Fprintln(c.stdout, "\nStopping the demo")
}

func (c *demoCommand) stopped() { fmt.Fprintln(c.stdout, "The demo stopped.") }

// maxDemoFolders bounds --folders: the fake keeps every folder in memory.
const maxDemoFolders = 200_000

func (c *demoCommand) ParseFlags(args []string) error {
	f := newFlags("demo", "[--listen ADDR] [--admin-listen ADDR] [--folders N] [--log-level LEVEL]",
		"Serves a generated domain from an in-process Google fake: no Google account needed.")
	f.logLevel(&c.logLevel, "warn")
	f.address(&c.listen, "listen", "127.0.0.1:8080", "host:port `ADDR` of the API")
	f.address(&c.adminListen, "admin-listen", "127.0.0.1:8081", "host:port `ADDR` of the admin listener, which foldermirror sync asks")
	f.check(func() error {
		if !config.IsLoopback(c.adminListen) {
			return fmt.Errorf("--admin-listen %q: the demo's admin listener has no token (adminTokenFile), so it stays on loopback; expected one such as 127.0.0.1:8081", c.adminListen)
		}
		return nil
	})
	f.fs.IntVar(&c.folders, "folders", demo.DefaultSpec.FoldersPerLibrary, "about how many folders (`N`) each library gets")
	f.check(func() error {
		if c.folders < 1 || c.folders > maxDemoFolders {
			return fmt.Errorf("--folders %d is out of range; expected 1 to %d", c.folders, maxDemoFolders)
		}
		return nil
	})
	return f.parse(args, nil)
}

func (c *demoCommand) Run(ctx context.Context) error {
	logger, err := newLogger(c.stderr, c.logLevel)
	if err != nil {
		return err
	}
	// Bound first: a taken port is said before the syncs, and the config
	// names the addresses really bound (port 0 included).
	if c.listeners, err = bindListeners(c.listen, "--listen", c.adminListen, "--admin-listen"); err != nil {
		return err
	}
	c.fake = googlefake.New()
	c.fake.AllowHTTPWebhooks(true) // the demo's API listener, on loopback
	c.fake.Start()
	spec := demo.DefaultSpec
	spec.FoldersPerLibrary = c.folders
	world := demo.Build(c.fake, spec)
	cfg, err := c.writeConfig(world)
	if err != nil {
		return err
	}
	if err := c.syncAll(ctx, cfg); err != nil {
		return err
	}
	ls := c.listeners
	c.listeners = nil // the daemon's now, closed by it
	if c.daemon, err = startDaemon(cfg, logger, ls); err != nil {
		return err
	}
	if err := c.startControl(world); err != nil {
		return err
	}
	pushed := c.awaitPush(ctx)
	c.printTryThis(world, cfg, pushed)
	return nil
}

// startControl serves the demo's controls over its Drive on a loopback
// port of their own.
func (c *demoCommand) startControl(world *demo.World) error {
	ln, err := bind("127.0.0.1:0", "the demo's Drive controls")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: world.Control(), ReadHeaderTimeout: 10 * time.Second}
	c.control = startServer(ln, func(ln net.Listener) error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}, srv.Shutdown)
	return nil
}

// awaitPush waits until the fake pushes every feed's changes to the
// daemon, so that a folder renamed as soon as the instructions show is
// pushed too, for demoPushWait at most; it reports whether it does.
func (c *demoCommand) awaitPush(ctx context.Context) bool {
	deadline := time.Now().Add(demoPushWait)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if !slices.ContainsFunc(c.daemon.push.Status(), func(f push.FeedStatus) bool { return f.Polling }) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// writeConfig writes the world's key and configuration into a new
// temporary directory and loads it as serve would.
func (c *demoCommand) writeConfig(world *demo.World) (*config.Config, error) {
	dir, err := os.MkdirTemp("", "foldermirror-demo-")
	if err != nil {
		return nil, fmt.Errorf("a directory for the demo's index: %w", err)
	}
	c.dir = dir
	keyFile := filepath.Join(dir, "service-account.json")
	if err := os.WriteFile(keyFile, c.fake.ServiceAccountKey(demo.ServiceAccount), 0o600); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "config.yaml")
	cfg := world.Config(c.listeners.api.Addr().String(), c.listeners.admin.Addr().String(), filepath.Join(dir, "data"), keyFile)
	cfg.Push.Address = "http://" + c.listeners.api.Addr().String() + demoPushPath
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return nil, err
	}
	return config.Load(path)
}

// syncAll syncs the directory and every library before serving, so the
// first request finds them.
func (c *demoCommand) syncAll(ctx context.Context, cfg *config.Config) error {
	quiet, _ := newLogger(io.Discard, "error")
	db, err := openIndex(cfg, quiet, nil)
	if err != nil {
		return err
	}
	defer db.Close() //nolint:errcheck // every sync committed what it wrote
	if err := connect(ctx, db); err != nil {
		return err
	}
	s, _, err := wire.NewSyncer(cfg, wire.Libraries(cfg), db, quiet, prometheus.NewRegistry())
	if err != nil {
		return err
	}
	runner := schedule.Runner{Syncer: s, Leases: db.Leases()}
	fmt.Fprintf(c.stdout, "foldermirror demo: a generated domain, %s, in an in-process Google Drive fake.\n\n", demo.Domain)
	for _, job := range wire.Plan(cfg, wire.Libraries(cfg)).Jobs("") {
		ev, err := runner.Run(ctx, job, fm.SyncFull, nil, schedule.RunOptions{})
		if err != nil {
			return err
		}
		if d := ev.Directory; d != nil {
			fmt.Fprintf(c.stdout, "  synced the directory of %s: %s, %s\n", d.Domain, count(d.Users, "user"), count(d.Groups, "group"))
			continue
		}
		fmt.Fprintln(c.stdout, demoSyncLine(cfg.Library(job), ev.Result))
	}
	return nil
}

// demoSyncLine is a library sync's outcome in a line of the demo's table.
func demoSyncLine(lib *config.Library, res *fm.SyncResult) string {
	return fmt.Sprintf("  synced %-12s %-11s %5d %-7s %6d %-11s  %4d %-11s  %s", lib.ID, lib.Name,
		res.Folders, noun(res.Folders, "folder"), res.Permissions, noun(res.Permissions, "permission"),
		res.Calls, noun(res.Calls, "Drive call"), res.Duration.Round(time.Millisecond))
}

func (c *demoCommand) printTryThis(world *demo.World, cfg *config.Config, pushed bool) {
	base := "http://" + c.daemon.api.addr.String()
	fmt.Fprintf(c.stdout, "\nThe API serves on %s (config: %s).\nTokens for four users, valid for a day:\n\n", base, cfg.Path)
	vars := []string{"ALICE", "BOB", "CAROL", "PAT"}
	for i, p := range demo.Personas {
		token := c.fake.GoogleIDToken(demo.ClientID, p.Email, googlefake.WithTTL(24*time.Hour))
		fmt.Fprintf(c.stdout, "# %s, %s\n%s='%s'\n\n", p.Email, p.About, vars[i], token)
	}
	root := world.Libraries[0].RootFolderID
	fmt.Fprintf(c.stdout, `Sync again while the demo runs (it asks the demo's daemon on its admin listener, %[3]s):
  %[4]s sync --config %[5]s --full

Try:
  # Alice, writer on Engineering, sees its top folders and what she may do with them:
  curl -s -H "Authorization: Bearer $ALICE" '%[1]s/folder/v1/libraries/lib-eng/folders/children?onlyDirectChildren=true'
  # Carol, the new hire, sees only the Handbook there:
  curl -s -H "Authorization: Bearer $CAROL" '%[1]s/folder/v1/libraries/lib-eng/folders/children?onlyDirectChildren=true'
  # Bob organizes the Sales shared drive: all its folders, streamed:
  curl -s -H "Authorization: Bearer $BOB"   '%[1]s/folder/v1/libraries/lib-sales/folders' | head -c 1500
  # Pat, outside the domain, sees the partner folder; Sales does not exist for Pat:
  curl -s -H "Authorization: Bearer $PAT"   '%[1]s/folder/v1/libraries/lib-partners/folders/children'
  curl -s -H "Authorization: Bearer $PAT"   '%[1]s/folder/v1/libraries/lib-sales/folders'
  # The Engineering root, and who it is shared with:
  curl -s -H "Authorization: Bearer $ALICE" '%[1]s/folder/v1/files/%[2]s'
  curl -s -H "Authorization: Bearer $ALICE" '%[1]s/folder/v1/folders/%[2]s/permissions'
  # The domain's configuration flags:
  curl -s -H "Authorization: Bearer $CAROL" '%[1]s/domain/v1beta1/configurationFlags'
`, base, root, "http://"+c.daemon.admin.addr.String(), selfName(), cfg.Path)
	c.printPushTry(world, cfg, pushed)
	c.printDiscoveryTry(world)
	fmt.Fprint(c.stdout, "\nPress Ctrl-C to stop.\n")
}

// printPushTry shows Drive's push notifications at work: a folder renamed
// in the demo's Drive, and the API serving the new name a moment later.
func (c *demoCommand) printPushTry(world *demo.World, cfg *config.Config, pushed bool) {
	if !pushed {
		fmt.Fprintf(c.stdout, "\nDrive has not yet accepted to push its changes to %s; see \"push\" in http://%s/status.\n",
			cfg.Push.Address, c.daemon.admin.addr.String())
		return
	}
	root := world.Libraries[0].RootFolderID
	fmt.Fprintf(c.stdout, `
Drive pushes its changes to the demo (push.address %[1]s), which syncs them at once:
  # Rename Engineering in the demo's Drive:
  curl -s -X POST -H '%[5]s: demo' '%[2]s'
  # A moment later, the API serves the new name:
  curl -s -H "Authorization: Bearer $ALICE" '%[3]s/folder/v1/files/%[4]s'
`, cfg.Push.Address, demo.RenameURL("http://"+c.control.addr.String(), root, "Platform engineering"),
		"http://"+c.daemon.api.addr.String(), root, demo.RequestHeader)
}

// printDiscoveryTry shows shared drives found by themselves: a drive the
// storage account is added to in the demo's Drive, then served.
func (c *demoCommand) printDiscoveryTry(world *demo.World) {
	fmt.Fprintf(c.stdout, `
%[1]s discovers its shared drives (domains[].sharedDrives): %[2]s are served though no
library names them. A drive the storage account is added to is served a moment later:
  # Create a shared drive in the demo's Drive and add the storage account to it (prints its ID):
  DRIVE=$(curl -s -X POST -H '%[3]s: demo' '%[4]s')
  # Its folders, as Bob, who organizes it (the library's ID is the drive's):
  curl -s -H "Authorization: Bearer $BOB" "%[5]s/folder/v1/libraries/$DRIVE/folders"
  # Each domain's discovery, in the admin listener's status:
  curl -s '%[6]s/status' | grep -A8 '"discovery"'
`, demo.Domain, teamDriveNames(world), demo.RequestHeader, demo.SharedDriveURL("http://"+c.control.addr.String(), "Research"),
		"http://"+c.daemon.api.addr.String(), "http://"+c.daemon.admin.addr.String())
}

// teamDriveNames names the world's shared drives that discovery finds,
// "Marketing and Legal".
func teamDriveNames(world *demo.World) string {
	names := make([]string, len(world.TeamDrives))
	for i, d := range world.TeamDrives {
		names[i] = d.Name
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// selfName returns how to name this program in a command line to paste:
// foldermirror when that is what $PATH finds, else its absolute path (as
// under go run).
func selfName() string {
	self, err := os.Executable()
	if err != nil {
		return "foldermirror"
	}
	if found, err := exec.LookPath("foldermirror"); err == nil && sameFile(found, self) {
		return "foldermirror"
	}
	return self
}

func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

func (c *demoCommand) Close() error {
	var err error
	if c.listeners != nil {
		c.listeners.Close()
	}
	if c.daemon != nil {
		err = c.daemon.Close()
	}
	err = errors.Join(err, c.control.stop(adminShutdownTimeout))
	if c.fake != nil {
		c.fake.Close()
	}
	if c.dir != "" {
		os.RemoveAll(c.dir)
	}
	return err
}
