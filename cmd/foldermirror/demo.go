package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/demo"
	"github.com/foldermirror/foldermirror/googlefake"
	"github.com/foldermirror/foldermirror/index"
	"github.com/foldermirror/foldermirror/syncer"
)

// demoCommand runs a generated domain in an in-process Google fake, syncs
// it, serves it, and prints requests to try as several users.
type demoCommand struct {
	stdout, stderr io.Writer
	listen         string
	logLevel       string
	folders        int

	fake   *googlefake.Server
	dir    string
	daemon *daemonParts
}

func (c *demoCommand) isDaemon() {}

func (c *demoCommand) ParseFlags(args []string) error {
	fs := newFlagSet("demo", nil, &c.logLevel, "warn")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8080", "address of the API")
	fs.IntVar(&c.folders, "folders", demo.DefaultSpec.FoldersPerLibrary, "about how many folders each library gets")
	return parseArgs(fs, args, nil)
}

func (c *demoCommand) Run(ctx context.Context) error {
	logger, err := newLogger(c.stderr, c.logLevel)
	if err != nil {
		return err
	}
	c.fake = googlefake.New()
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
	if c.daemon, err = startDaemon(cfg, logger); err != nil {
		return err
	}
	c.printTryThis(world, cfg)
	return nil
}

// writeConfig writes the world's key and configuration into a new
// temporary directory and loads it as serve would.
func (c *demoCommand) writeConfig(world *demo.World) (*config.Config, error) {
	dir, err := os.MkdirTemp("", "foldermirror-demo-")
	if err != nil {
		return nil, err
	}
	c.dir = dir
	keyFile := filepath.Join(dir, "service-account.json")
	if err := os.WriteFile(keyFile, c.fake.ServiceAccountKey(demo.ServiceAccount), 0o600); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "config.yaml")
	yaml := world.ConfigYAML(c.listen, "127.0.0.1:0", filepath.Join(dir, "data"), keyFile)
	if err := os.WriteFile(path, yaml, 0o600); err != nil {
		return nil, err
	}
	return config.Load(path)
}

// syncAll syncs the directory and every library before serving, so the
// first request finds them.
func (c *demoCommand) syncAll(ctx context.Context, cfg *config.Config) error {
	quiet, _ := newLogger(io.Discard, "error")
	db, err := index.Open(cfg.DataDir, quiet)
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := syncer.New(cfg, db, syncer.Options{Logger: quiet})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "foldermirror demo: a generated domain, %s, in an in-process Google Drive fake.\n\n", demo.Domain)
	for _, job := range syncer.Jobs(cfg, "") {
		ev, err := s.Run(ctx, job, syncer.Full, nil)
		if err != nil {
			return err
		}
		if d := ev.Directory; d != nil {
			fmt.Fprintf(c.stdout, "  synced the directory of %s: %d users, %d groups\n", d.Domain, d.Users, d.Groups)
			continue
		}
		res, lib := ev.Result, cfg.Library(job)
		fmt.Fprintf(c.stdout, "  synced %-12s %-11s %5d folders %6d permissions  %4d Drive calls  %s\n",
			lib.ID, lib.Name, res.Folders, res.Permissions, res.Calls, res.Duration.Round(time.Millisecond))
	}
	return nil
}

func (c *demoCommand) printTryThis(world *demo.World, cfg *config.Config) {
	base := "http://" + c.daemon.api.addr.String()
	fmt.Fprintf(c.stdout, "\nThe API serves on %s (config: %s).\nTokens for four users, valid for a day:\n\n", base, cfg.Path)
	vars := []string{"ALICE", "BOB", "CAROL", "PAT"}
	for i, p := range demo.Personas {
		token := c.fake.GoogleIDToken(demo.ClientID, p.Email, googlefake.WithTTL(24*time.Hour))
		fmt.Fprintf(c.stdout, "# %s, %s\n%s='%s'\n\n", p.Email, p.About, vars[i], token)
	}
	root := world.Libraries[0].RootFolderID
	fmt.Fprintf(c.stdout, `Try:
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

Press Ctrl-C to stop.
`, base, root)
}

func (c *demoCommand) Close() error {
	var err error
	if c.daemon != nil {
		err = c.daemon.Close()
	}
	if c.fake != nil {
		c.fake.Close()
	}
	if c.dir != "" {
		os.RemoveAll(c.dir)
	}
	return err
}
