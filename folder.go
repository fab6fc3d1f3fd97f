package foldermirror

// Folder is a folder of a library as the index holds it. Its permissions
// are kept apart, in permission sets that folders with equal lists share.
type Folder struct {
	ID       string
	ParentID string // "" for the library root
	Name     string
	// ResourceKey is Drive's resourceKey, "" if none.
	ResourceKey string
	// DefinitionID is Drive's appProperties.folderDefinitionId, "" if unset.
	DefinitionID string
	// OwnRestrictedDownload: Drive restricts copying or downloading by readers
	// on this folder itself.
	OwnRestrictedDownload bool
	// RestrictedDownload: on this folder or any ancestor up to the root.
	RestrictedDownload bool
	// WritersCanShare is Drive's writersCanShare (true in shared drives, where
	// the drive's restriction decides instead).
	WritersCanShare bool
	// PermissionSet names the set of permissions Drive lists for the folder,
	// inherited ones included.
	PermissionSet PermissionSetKey
	// OwnSet names the set of the permissions set on the folder itself (not
	// inherited), from which its list is made again when an ancestor's
	// permissions change.
	OwnSet PermissionSetKey
}

// SyncedFolder is a folder with its permissions, as a sync read them.
type SyncedFolder struct {
	Folder
	// Permissions are Drive's list for the folder, in Drive's order.
	Permissions []Permission
	// OwnPermissions are those of Permissions set on the folder itself.
	OwnPermissions []Permission
}

// ChildLink ties a folder to its parent.
type ChildLink struct{ ParentID, ChildID string }
