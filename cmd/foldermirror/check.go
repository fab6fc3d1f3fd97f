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
	fmt.Fprintf(c.stdout, "%s: valid (%s)\n", c.configPath, configSummary(cfg))
	if servesNoLibrary(cfg) {
		fmt.Fprintln(c.stdout, noLibraries)
	}
	return nil
}

// configSummary counts what a configuration serves: "1 domain, 2 libraries,
// shared drives discovered in 1 domain".
func configSummary(cfg *config.Config) string {
	s := count(len(cfg.Domains), "domain") + ", " + count(len(cfg.Libraries), "library")
	if n := len(cfg.SharedDriveDiscoveries()); n > 0 {
		s += ", shared drives discovered in " + count(n, "domain")
	}
	return s
}

// servesNoLibrary tells whether a configuration has no library, configured
// or discovered: it serves configuration flags only.
func servesNoLibrary(cfg *config.Config) bool {
	return len(cfg.Libraries) == 0 && len(cfg.SharedDriveDiscoveries()) == 0
}

func (c *configCheckCommand) Close() error { return nil }

// noLibraries says what a configuration without libraries serves.
const noLibraries = "No libraries are configured: the API serves configuration flags only " +
	"(add libraries[] to mirror folders, or domains[].sharedDrives to discover shared drives)."

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
