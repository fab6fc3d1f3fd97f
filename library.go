package foldermirror

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
