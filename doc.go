// Package foldermirror holds the domain types shared by the syncer, the
// scheduler, the index and the HTTP API: the libraries mirrored, folders,
// Drive permissions, the grants they make, the sync state of a library, what
// a sync is asked and reports, and the interfaces an index backend offers.
//
// Subpackages each own one concern: config (loading and validation), index
// (opening an index from its URL, kept by index/bolt or index/postgres),
// googleclient (the clients of Google's APIs), syncer (reading Google Drive
// and the Directory), schedule (running the syncs under their leases, on
// schedules and on request), push (Drive's push notifications), httpapi (the
// REST API), internal/wire (the configuration mapped onto each package's
// options), internal/demo (the demo's generated domain) and
// internal/googlefake (test fakes of Google's APIs).
package foldermirror
