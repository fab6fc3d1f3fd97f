package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// versionCommand prints the module version and the VCS revision the
// binary was built from.
type versionCommand struct {
	stdout io.Writer
}

func (c *versionCommand) ParseFlags(args []string) error {
	return newFlags("version", "", "Prints the version and the VCS revision foldermirror was built from.").parse(args, nil)
}

func (c *versionCommand) Run(context.Context) error {
	info, _ := debug.ReadBuildInfo() // nil without build information
	fmt.Fprintln(c.stdout, versionLine(info))
	return nil
}

func (c *versionCommand) Close() error { return nil }

// versionLine says what a build is: "foldermirror v1.2.0 (revision
// 0123456789ab, 2026-01-02T03:04:05Z) go1.26.8"; info is nil when the
// binary carries no build information.
func versionLine(info *debug.BuildInfo) string {
	if info == nil {
		return "foldermirror (no build information)"
	}
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	var vcs []string
	switch rev := settings["vcs.revision"]; rev {
	case "":
		// Go stamps the revision only when go build (or go install) runs
		// in a git checkout without -buildvcs=false; go run never does.
		vcs = append(vcs, "no VCS revision stamped: built by go run, with -buildvcs=false, or outside a git checkout")
	default:
		vcs = append(vcs, "revision "+rev[:min(12, len(rev))])
		if t := settings["vcs.time"]; t != "" {
			vcs = append(vcs, t)
		}
		if settings["vcs.modified"] == "true" {
			vcs = append(vcs, "with local changes")
		}
	}
	return fmt.Sprintf("foldermirror %s (%s) %s", version, strings.Join(vcs, ", "), info.GoVersion)
}
