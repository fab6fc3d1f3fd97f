package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/index"
	"github.com/foldermirror/foldermirror/syncer"
)

// syncCommand syncs libraries now, showing progress.
type syncCommand struct {
	stdout, stderr io.Writer
	configPath     string
	logLevel       string
	library        string
	full           bool

	db *index.DB
}

func (c *syncCommand) ParseFlags(args []string) error {
	fs := newFlagSet("sync", &c.configPath, &c.logLevel, "warn") // progress says what info logs would
	fs.StringVar(&c.library, "library", "", "sync only this library (default: all)")
	fs.BoolVar(&c.full, "full", false, "read whole trees even where a changes token is saved")
	return parseArgs(fs, args, &c.configPath)
}

func (c *syncCommand) Run(ctx context.Context) error {
	cfg, err := config.Load(c.configPath)
	if err != nil {
		return err
	}
	logger, err := newLogger(c.stderr, c.logLevel)
	if err != nil {
		return err
	}
	libraries, err := c.libraries(cfg)
	if err != nil {
		return err
	}
	if c.db, err = index.Open(cfg.DataDir, logger); err != nil {
		return err
	}
	s, err := syncer.New(cfg, c.db, syncer.Options{Logger: logger})
	if err != nil {
		return err
	}
	mode := syncer.Auto
	if c.full {
		mode = syncer.Full
	}
	var failed []error
	if c.library == "" {
		failed = c.syncDirectories(ctx, s, cfg)
	}
	for _, id := range libraries {
		show := newProgressView(c.stderr, id)
		res, err := s.Sync(ctx, id, mode, show.update)
		show.finish()
		if err != nil {
			fmt.Fprintf(c.stderr, "%s: failed: %v\n", id, err)
			failed = append(failed, err)
			continue
		}
		fmt.Fprintf(c.stdout, "%s: %s sync: %d folders, %d permissions, %d Drive calls, %s\n",
			id, kind(res.Full), res.Folders, res.Permissions, res.Calls, res.Duration.Round(time.Millisecond))
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d syncs failed: %w", len(failed), errors.Join(failed...))
	}
	return nil
}

// syncDirectories syncs the directory of each domain with an adminEmail.
func (c *syncCommand) syncDirectories(ctx context.Context, s *syncer.Syncer, cfg *config.Config) []error {
	var failed []error
	for _, dom := range cfg.Domains {
		if dom.AdminEmail == "" {
			continue
		}
		res, err := s.SyncDirectory(ctx, dom.Name)
		if err != nil {
			fmt.Fprintf(c.stderr, "directory of %s: failed: %v\n", dom.Name, err)
			failed = append(failed, err)
			continue
		}
		fmt.Fprintf(c.stdout, "directory of %s: %d users, %d groups, %d Directory calls, %s\n",
			dom.Name, res.Users, res.Groups, res.Calls, res.Duration.Round(time.Millisecond))
	}
	return failed
}

func kind(full bool) string {
	if full {
		return "full"
	}
	return "incremental"
}

func (c *syncCommand) libraries(cfg *config.Config) ([]string, error) {
	if c.library != "" {
		if cfg.Library(c.library) == nil {
			return nil, fmt.Errorf("--library %s: no such library in %s", c.library, c.configPath)
		}
		return []string{c.library}, nil
	}
	ids := make([]string, len(cfg.Libraries))
	for i, l := range cfg.Libraries {
		ids[i] = l.ID
	}
	return ids, nil
}

func (c *syncCommand) Close() error {
	if c.db == nil {
		return nil
	}
	return c.db.Close()
}
