package bolt

import (
	"bytes"
	"encoding/binary"
	"unsafe"

	bbolt "go.etcd.io/bbolt"
)

// get returns the value of key in c's bucket, nil if none: bbolt's
// Bucket.Get makes a cursor, and the path it walks, at each read; a cursor
// read again and again keeps them. The value is valid as Get's is.
func get(c *bbolt.Cursor, key []byte) []byte {
	k, v := c.Seek(key)
	if !bytes.Equal(k, key) {
		return nil
	}
	return v
}

// getFolder returns the record of folder id in c's bucket (see get), nil
// if none.
func getFolder(c *bbolt.Cursor, id string) []byte {
	return get(c, idKey(id))
}

// idKey is a folder's key: its ID's bytes, not a copy, for bbolt's reads,
// Put and Delete, which copy a key they keep (they must not change it).
func idKey(id string) []byte {
	return unsafe.Slice(unsafe.StringData(id), len(id))
}

// appendChildKey appends the key of a child link to dst: parentID 0x00
// childID, so that a parent's children are together, in order of ID.
func appendChildKey(dst []byte, parentID, childID string) []byte {
	dst = append(dst, parentID...)
	dst = append(dst, 0)
	return append(dst, childID...)
}

// appendLogKey appends the log key revision (8 bytes, big-endian) folderID
// to dst: a library's changes in order of revision.
func appendLogKey(dst []byte, revision uint64, folderID string) []byte {
	return append(binary.BigEndian.AppendUint64(dst, revision), folderID...)
}

// revisionPrefix is the prefix of a revision's log keys.
func revisionPrefix(revision uint64) []byte {
	return binary.BigEndian.AppendUint64(nil, revision)
}
