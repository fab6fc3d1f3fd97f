package main

import (
	"context"
	"fmt"
	"io"

	"github.com/foldermirror/foldermirror/config"
)

// configCheckCommand validates a configuration file.
type configCheckCommand struct {
	stdout     io.Writer
	configPath string
}

func (c *configCheckCommand) ParseFlags(args []string) error {
	fs := newFlagSet("config check", &c.configPath, nil, "")
	return parseArgs(fs, args, &c.configPath)
}

func (c *configCheckCommand) Run(context.Context) error {
	cfg, err := config.Load(c.configPath)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s: valid (%d domains, %d libraries)\n", c.configPath, len(cfg.Domains), len(cfg.Libraries))
	return nil
}

func (c *configCheckCommand) Close() error { return nil }
