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
func count[N int | int64](n N, singular string) string {
	return fmt.Sprintf("%d %s", n, noun(n, singular))
}

// noun returns singular for 1 of it, else its plural: "library",
// "libraries".
func noun[N int | int64](n N, singular string) string {
	switch y, ok := strings.CutSuffix(singular, "y"); {
	case n == 1:
		return singular
	case ok:
		return y + "ies"
	}
	return singular + "s"
}
