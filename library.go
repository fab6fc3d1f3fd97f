package foldermirror

// Library is a Drive folder tree, or a shared drive, that is mirrored: what
// the syncer reads and the API serves under /libraries/{ID}.
//
// The configuration lists libraries under libraries[]; the yaml tags are its
// keys, which package config decodes into this type (and validates, and
// normalises: Name defaults to ID, Domain and StorageAccount are
// lower-cased).
type Library struct {
	// ID names the library in URL paths.
	ID string `yaml:"id"`
	// Name is for display; it defaults to ID.
	Name string `yaml:"name"`
	// Domain is the name of the configured domain the library belongs to.
	Domain string `yaml:"domain"`
	// StorageAccount is the user whose Drive is read.
	StorageAccount string `yaml:"storageAccount"`
	// RootFolderID is the Drive ID of the root of a folder tree; exactly one
	// of it and SharedDriveID is set.
	RootFolderID string `yaml:"rootFolderId"`
	// SharedDriveID is the ID of a shared drive mirrored whole.
	SharedDriveID string `yaml:"sharedDriveId"`
	// FolderDefinitionID is the folderDefinitionId the API reports for the
	// library's folders that have none of their own in Drive.
	FolderDefinitionID string `yaml:"folderDefinitionId"`
}

// IsSharedDrive reports whether the library is a shared drive rather than a
// folder tree.
func (l *Library) IsSharedDrive() bool { return l.SharedDriveID != "" }
