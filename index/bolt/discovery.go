package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	fm "github.com/foldermirror/foldermirror"
	bbolt "go.etcd.io/bbolt"
)

// Discoveries of shared drives: discoveries/<domain>/ holds
//
//	state   the discovery's record (see encodeDiscovery)
//	drives  drive ID → the drive's record (see encodeDrive)
//
// The bucket discoveries is made with the schema (6, see upgradeFrom5).

var (
	bucketDiscoveries = []byte("discoveries")
	bucketDrives      = []byte("drives")
)

var _ fm.DiscoveryStore = (*DB)(nil)

// Discoveries returns each domain's discovery, without its drives, in
// order of domain.
func (db *DB) Discoveries(context.Context) ([]fm.Discovery, error) {
	var out []fm.Discovery
	err := db.bolt.View(func(tx *bbolt.Tx) error {
		all, err := discoveries(tx)
		if err != nil {
			return err
		}
		return all.ForEachBucket(func(name []byte) error {
			d, err := decodeDiscovery(string(name), all.Bucket(name).Get(keyState))
			if err != nil {
				return fmt.Errorf("discovery of %s: %w", name, err)
			}
			out = append(out, d)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read the discoveries in index %s: %w", db.path, err)
	}
	return out, nil
}

// DiscoveredDrives returns the drives of a domain's discovery, sorted by
// ID, with its revision, read in one transaction.
func (db *DB) DiscoveredDrives(_ context.Context, domain string) ([]fm.DiscoveredDrive, uint64, error) {
	var drives []fm.DiscoveredDrive
	var revision uint64
	err := db.bolt.View(func(tx *bbolt.Tx) error {
		all, err := discoveries(tx)
		if err != nil {
			return err
		}
		dom := all.Bucket([]byte(domain))
		if dom == nil {
			return nil
		}
		d, err := decodeDiscovery(domain, dom.Get(keyState))
		if err != nil {
			return err
		}
		revision = d.Revision
		drives, err = readDrives(dom)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read the discovered drives of %s in index %s: %w", domain, db.path, err)
	}
	return drives, revision, nil
}

// PutDiscovery records a domain's discovery in one transaction; given
// drives, it writes those that differ from the ones stored, and deletes
// those no longer found, growing the revision if any did. The fence is
// ignored, as by every write of an index one process holds alone.
func (db *DB) PutDiscovery(_ context.Context, d fm.Discovery, _ fm.Fence) error {
	if d.Domain == "" {
		return errors.New("write a discovery: it names no domain")
	}
	var drives []fm.DiscoveredDrive
	if d.Drives != nil {
		drives = fm.DiscoveredDrivesSorted(d.Drives)
	}
	return db.update("write the discovery of "+d.Domain, func(tx *bbolt.Tx) error {
		all, err := discoveries(tx)
		if err != nil {
			return err
		}
		dom, err := all.CreateBucketIfNotExists([]byte(d.Domain))
		if err != nil {
			return err
		}
		d.Revision = 0
		if v := dom.Get(keyState); v != nil {
			was, err := decodeDiscovery(d.Domain, v)
			if err != nil {
				return err
			}
			d.Revision = was.Revision
		}
		if d.Drives != nil {
			changed, err := replaceDrives(dom, drives)
			if err != nil {
				return err
			}
			if changed {
				d.Revision++
			}
		}
		return dom.Put(keyState, encodeDiscovery(&d))
	})
}

// discoveries returns the bucket of the discoveries, which the schema has.
func discoveries(tx *bbolt.Tx) (*bbolt.Bucket, error) {
	b := tx.Bucket(bucketDiscoveries)
	if b == nil {
		return nil, fmt.Errorf("%w: no bucket of discoveries", errCorrupt)
	}
	return b, nil
}

// readDrives reads the drives of a domain's bucket, in order of ID.
func readDrives(dom *bbolt.Bucket) ([]fm.DiscoveredDrive, error) {
	stored := dom.Bucket(bucketDrives)
	if stored == nil {
		return nil, nil
	}
	var drives []fm.DiscoveredDrive
	err := stored.ForEach(func(k, v []byte) error {
		drive, err := decodeDrive(string(k), v)
		if err != nil {
			return fmt.Errorf("drive %s: %w", k, err)
		}
		drives = append(drives, drive)
		return nil
	})
	return drives, err
}

// replaceDrives makes a domain's bucket hold drives (sorted by ID, each
// once) by writing the drives that differ from those stored and deleting
// those it lacks, and tells whether any did.
func replaceDrives(dom *bbolt.Bucket, drives []fm.DiscoveredDrive) (bool, error) {
	stored, err := dom.CreateBucketIfNotExists(bucketDrives)
	if err != nil {
		return false, err
	}
	gone, put := diffDrives(stored, drives)
	for _, id := range gone {
		if err := stored.Delete(id); err != nil {
			return false, err
		}
	}
	for _, d := range put {
		if err := stored.Put([]byte(d.ID), encodeDrive(&d)); err != nil {
			return false, err
		}
	}
	return len(gone) > 0 || len(put) > 0, nil
}

// diffDrives compares the drives stored with drives (sorted by ID, each
// once), both in order of ID: it returns the IDs stored that drives lack,
// and the drives that are not stored as they are.
func diffDrives(stored *bbolt.Bucket, drives []fm.DiscoveredDrive) (gone [][]byte, put []fm.DiscoveredDrive) {
	c := stored.Cursor()
	k, v := c.First()
	for _, d := range drives {
		for ; k != nil && string(k) < d.ID; k, v = c.Next() {
			gone = append(gone, bytes.Clone(k))
		}
		if k == nil || string(k) != d.ID {
			put = append(put, d)
			continue
		}
		if !bytes.Equal(v, encodeDrive(&d)) {
			put = append(put, d)
		}
		k, v = c.Next()
	}
	for ; k != nil; k, _ = c.Next() {
		gone = append(gone, bytes.Clone(k))
	}
	return gone, put
}

// encodeDiscovery encodes everything of d but its domain, which names its
// bucket, and its drives: the storage account, when it ended, its error
// and the drives' revision.
func encodeDiscovery(d *fm.Discovery) []byte {
	e := encoder{buf: make([]byte, 0, 32+len(d.StorageAccount)+len(d.Error))}
	e.byte(recordFormat)
	e.str(d.StorageAccount)
	e.time(d.At)
	e.str(d.Error)
	e.uint(d.Revision)
	return e.buf
}

// decodeDiscovery decodes a discovery record, whose domain it sets to
// domain.
func decodeDiscovery(domain string, b []byte) (fm.Discovery, error) {
	d := decoder{buf: b}
	d.header()
	disc := fm.Discovery{Domain: domain, StorageAccount: d.str(), At: d.time(), Error: d.str(), Revision: d.uint()}
	return disc, d.done()
}

// encodeDrive encodes everything of a drive but its ID, which is the
// record's key: its name and whether it is hidden.
func encodeDrive(drive *fm.DiscoveredDrive) []byte {
	e := encoder{buf: make([]byte, 0, 8+len(drive.Name))}
	e.byte(recordFormat)
	e.str(drive.Name)
	e.bool(drive.Hidden)
	return e.buf
}

// decodeDrive decodes a drive record, whose ID it sets to id.
func decodeDrive(id string, b []byte) (fm.DiscoveredDrive, error) {
	d := decoder{buf: b}
	d.header()
	drive := fm.DiscoveredDrive{ID: id, Name: d.str(), Hidden: d.bool()}
	return drive, d.done()
}
