package foldermirror

import "time"

// Library is a Drive folder tree, or a shared drive, that is mirrored: what
// the syncer reads and the API serves under /libraries/{ID}.
//
// The configuration lists libraries under libraries[]; package config
// decodes, validates and normalises them (Name defaults to ID, Domain and
// StorageAccount are lower-cased) and maps each onto a Library.
type Library struct {
	// ID names the library in URL paths.
	ID string
	// Name is for display; it defaults to ID.
	Name string
	// Domain is the name of the configured domain the library belongs to.
	Domain string
	// StorageAccount is the user whose Drive is read.
	StorageAccount string
	// RootFolderID is the Drive ID of the root of a folder tree; exactly one
	// of it and SharedDriveID is set.
	RootFolderID string
	// SharedDriveID is the ID of a shared drive mirrored whole.
	SharedDriveID string
	// FolderDefinitionID is the folderDefinitionId the API reports for the
	// library's folders that have none of their own in Drive.
	FolderDefinitionID string
}

// IsSharedDrive reports whether the library is a shared drive rather than a
// folder tree.
func (l *Library) IsSharedDrive() bool { return l.SharedDriveID != "" }

// LibraryState is what the index knows of a synced library.
type LibraryState struct {
	ID     string
	RootID string
	// DriveID is the shared drive's ID, "" for a My Drive library.
	DriveID string
	// SharingRequiresOrganizer is the shared drive's restriction
	// sharingFoldersRequiresOrganizerPermission.
	SharingRequiresOrganizer bool
	// StartPageToken is the Drive changes token to read changes from.
	StartPageToken      string
	LastFullSync        time.Time
	LastIncrementalSync time.Time
	Folders             int
	Permissions         int
	// Revision grows whenever what readers see changes: the tree, its
	// permissions, RootID, DriveID or SharingRequiresOrganizer. The index
	// maintains it; a revision set by a writer is ignored.
	Revision uint64
}

// LastSynced returns the time of the library's latest sync of any kind.
func (s *LibraryState) LastSynced() time.Time {
	if s.LastIncrementalSync.After(s.LastFullSync) {
		return s.LastIncrementalSync
	}
	return s.LastFullSync
}

// Drift counts what a full sync found different from the tree it replaced.
type Drift struct {
	Added, Removed, Changed int
}

// Total is the number of folders that differed.
func (d Drift) Total() int { return d.Added + d.Removed + d.Changed }
