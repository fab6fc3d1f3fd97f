package syncer

import (
	"context"
	"strings"

	"github.com/foldermirror/foldermirror/config"
)

// directoryJob prefixes the job names of directory syncs (library IDs
// cannot contain ':').
const directoryJob = "directory:"

// DirectoryJob is the name a domain's directory sync goes by.
func DirectoryJob(domain string) string { return directoryJob + domain }

// Jobs names what a sync of library brings: that library alone or, for "",
// every domain's directory (of the domains with an adminEmail) and then
// every library. It returns nil for a library cfg does not have.
func Jobs(cfg *config.Config, library string) []string {
	if library != "" {
		if cfg.Library(library) == nil {
			return nil
		}
		return []string{library}
	}
	names := directoryJobs(cfg)
	for _, l := range cfg.Libraries {
		names = append(names, l.ID)
	}
	return names
}

// directoryJobs names the directory syncs of cfg's domains.
func directoryJobs(cfg *config.Config) []string {
	var names []string
	for _, d := range cfg.Domains {
		if d.AdminEmail != "" {
			names = append(names, DirectoryJob(d.Name))
		}
	}
	return names
}

// Run runs the job named: a domain's directory sync (always whole), or a
// library's sync in mode.
func (s *Syncer) Run(ctx context.Context, job string, mode Mode, progress ProgressFunc) (Event, error) {
	if domain, ok := strings.CutPrefix(job, directoryJob); ok {
		res, err := s.SyncDirectory(ctx, domain)
		return Event{Job: job, Directory: res}, err
	}
	res, err := s.Sync(ctx, job, mode, progress)
	return Event{Job: job, Result: res}, err
}
