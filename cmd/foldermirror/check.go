package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/foldermirror/foldermirror/config"
)

// configCheckCommand validates a configuration file.
type configCheckCommand struct {
	stdout     io.Writer
	configPath string
}

func (c *configCheckCommand) ParseFlags(args []string) error {
	f := newFlags("config check", "--config FILE", "Validates a configuration and says what is wrong, naming the key.")
	f.config(&c.configPath)
	return f.parse(args, &c.configPath)
}

func (c *configCheckCommand) Run(context.Context) error {
	cfg, err := config.Load(c.configPath)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s: valid (%s, %s)\n", c.configPath, count(len(cfg.Domains), "domain"), count(len(cfg.Libraries), "library"))
	if len(cfg.Libraries) == 0 {
		fmt.Fprintln(c.stdout, noLibraries)
	}
	return nil
}

func (c *configCheckCommand) Close() error { return nil }

// noLibraries says what a configuration without libraries serves.
const noLibraries = "No libraries are configured: the API serves configuration flags only (add libraries[] to mirror folders)."

// count returns "1 library", "2 libraries", "0 domains".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if y, ok := strings.CutSuffix(noun, "y"); ok {
		return fmt.Sprintf("%d %sies", n, y)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
