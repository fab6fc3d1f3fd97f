package bolt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	fm "github.com/foldermirror/foldermirror"
	bbolt "go.etcd.io/bbolt"
)

// A library's catalog (fm.CatalogStore) is kept in its bucket, beside its
// trees, so that it goes with the library (see retire) and outlives the
// full syncs whose changes its reader can catch up with from the log:
//
//	libraries/<libraryID>/catalog   chunk number (4 bytes, big-endian) → up to catalogChunk bytes;
//	                                keyChunks → the number of chunks (4 bytes), once all are written
//
// The catalog is the chunks' concatenation. It is written in several
// transactions, since bbolt holds a copy of what a transaction writes
// until it commits, and a catalog of a million folders takes 80 MB: the
// number of chunks is written last, and a catalog without it is none.

var _ fm.CatalogStore = (*DB)(nil)

var (
	bucketCatalog = []byte("catalog")
	keyChunks     = []byte("chunks")
)

// catalogChunk is the most bytes a chunk holds: a value takes contiguous
// pages of the file, which a few megabytes at most find easily among the
// free ones. chunksPerTx is how many a transaction writes.
const (
	catalogChunk = 1 << 20
	chunksPerTx  = 16
)

// SaveCatalog keeps the concatenation of parts as the library's catalog,
// in place of the one it kept. Once it started, the index keeps no catalog
// of the library until it ends; cut short (ctx ending between two
// transactions, or a crash), it leaves none.
func (db *DB) SaveCatalog(ctx context.Context, libraryID string, parts [][]byte) error {
	chunks := chunk(parts)
	for first := 0; first == 0 || first < len(chunks); first += chunksPerTx {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := db.update("save the catalog of "+libraryID, func(tx *bbolt.Tx) error {
			lib := tx.Bucket(bucketLibraries).Bucket([]byte(libraryID))
			if lib == nil || lib.Get(keyState) == nil {
				return fm.Errorf(fm.ENOTFOUND, "Library %s has not been synced.", libraryID)
			}
			cat, err := catalogBucket(lib, first == 0)
			if err != nil {
				return err
			}
			last := min(first+chunksPerTx, len(chunks))
			for n := first; n < last; n++ {
				if err := cat.Put(binary.BigEndian.AppendUint32(nil, uint32(n)), chunks[n]); err != nil {
					return err
				}
			}
			if last < len(chunks) {
				return nil
			}
			return cat.Put(keyChunks, binary.BigEndian.AppendUint32(nil, uint32(len(chunks))))
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// chunk cuts parts into chunks of at most catalogChunk bytes, without
// copying them.
func chunk(parts [][]byte) [][]byte {
	var chunks [][]byte
	for _, part := range parts {
		for len(part) > 0 {
			c := part[:min(len(part), catalogChunk)]
			chunks, part = append(chunks, c), part[len(c):]
		}
	}
	return chunks
}

// catalogBucket returns the library's catalog bucket, made empty if
// fresh; a bucket whose last transaction was cut short lacks keyChunks,
// and holds no catalog.
func catalogBucket(lib *bbolt.Bucket, fresh bool) (*bbolt.Bucket, error) {
	if !fresh {
		if cat := lib.Bucket(bucketCatalog); cat != nil && cat.Get(keyChunks) == nil {
			return cat, nil
		}
		return nil, errors.New("the catalog being saved was replaced meanwhile")
	}
	if lib.Bucket(bucketCatalog) != nil {
		if err := lib.DeleteBucket(bucketCatalog); err != nil {
			return nil, err
		}
	}
	cat, err := lib.CreateBucket(bucketCatalog)
	if err == nil {
		cat.FillPercent = 1 // chunks are appended in order
	}
	return cat, err
}

// ReadCatalog hands fn the library's catalog, read from the chunks in
// place; the pages it read are released as ReadLibrary's are.
func (db *DB) ReadCatalog(_ context.Context, libraryID string, fn func(r io.Reader, size int64) error) error {
	defer db.releaseAfter(libraryID)()
	return db.bolt.View(func(tx *bbolt.Tx) error {
		lib := tx.Bucket(bucketLibraries).Bucket([]byte(libraryID))
		var cat *bbolt.Bucket
		if lib != nil {
			cat = lib.Bucket(bucketCatalog)
		}
		var chunks []byte
		if cat != nil {
			chunks = cat.Get(keyChunks)
		}
		if len(chunks) != 4 {
			return fm.Errorf(fm.ENOTFOUND, "Library %s has no catalog kept.", libraryID)
		}
		n := binary.BigEndian.Uint32(chunks)
		var size int64
		for i := range n {
			v := cat.Get(binary.BigEndian.AppendUint32(nil, i))
			if v == nil {
				return fmt.Errorf("library %s: chunk %d of its catalog missing", libraryID, i)
			}
			size += int64(len(v))
		}
		return fn(&chunkReader{cat: cat, chunks: n}, size)
	})
}

// chunkReader reads a catalog's chunks one after the other.
type chunkReader struct {
	cat          *bbolt.Bucket
	next, chunks uint32
	chunk        []byte
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.chunk) == 0 {
		if r.next == r.chunks {
			return 0, io.EOF
		}
		r.chunk = r.cat.Get(binary.BigEndian.AppendUint32(nil, r.next))
		r.next++
	}
	n := copy(p, r.chunk)
	r.chunk = r.chunk[n:]
	return n, nil
}
