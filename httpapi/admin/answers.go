package admin

import (
	"strings"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/discovery"
	"github.com/foldermirror/foldermirror/push"
	"github.com/foldermirror/foldermirror/schedule"
)

// The answers below are the admin listener's JSON, written by Server and
// read by Client. The fields of Health, Readiness and Refusal are in the
// order of their JSON names, the order in which the listener has always
// written them.

// Health is what GET /healthz answers: the daemon is alive.
type Health struct {
	// Proof is the proof that the daemon holds the token (see Proof), to a
	// client of its host that sent a challenge (ChallengeParam).
	Proof string `json:"proof,omitempty"`
	// Service is Service, so that a client knows it reached a foldermirror
	// daemon.
	Service string `json:"service"`
	Status  string `json:"status"`
}

// Readiness is what GET /readyz answers: ready or not, and why. Without
// the token (when one is configured) Status comes alone.
type Readiness struct {
	// Libraries are the IDs of the libraries not ready yet: no synced tree,
	// or no catalog built.
	Libraries []string `json:"libraries,omitempty"`
	// Problem is the index's: why its database cannot be reached.
	Problem string `json:"problem,omitempty"`
	// Status is "ready", "degraded" (serving what it read: the database
	// stopped answering since), "waiting for the index", "waiting for the
	// shared drives discovered before" (reading them from the index, at
	// start) or "waiting for a first sync, or for its catalog".
	Status string `json:"status"`
}

// String says the status, then its problem or the libraries it waits for.
func (r Readiness) String() string {
	switch {
	case r.Problem != "":
		return r.Status + ": " + r.Problem
	case len(r.Libraries) > 0:
		return r.Status + ": " + strings.Join(r.Libraries, ", ")
	}
	return r.Status
}

// Status is what GET /status answers: the jobs, the index and the feeds
// Drive pushes.
type Status struct {
	Libraries []LibraryStatus `json:"libraries"`
	// LibrariesNotListed counts the discovered libraries left out of
	// Libraries, when there are too many to list: /status?library=ID tells
	// each.
	LibrariesNotListed int               `json:"librariesNotListed,omitempty"`
	Directories        []DirectoryStatus `json:"directories"`
	Index              fm.IndexInfo      `json:"index"`
	// Discovery is each domain's shared drive discovery, when a domain
	// discovers its drives.
	Discovery []discovery.DomainStatus `json:"discovery,omitempty"`
	// Push is the status of each feed Drive pushes, when push.address is
	// set (an empty list when it has no feed), unless there are more than
	// 100: PushSummary counts them, in all and by domain.
	Push        []push.FeedStatus `json:"push,omitzero"`
	PushSummary *push.FeedSummary `json:"pushSummary,omitempty"`
}

// LibraryStatus is a library's line in Status.
type LibraryStatus struct {
	schedule.JobStatus
	LibraryName string `json:"libraryName"`
	Domain      string `json:"domain"`
	// Discovered: the library is a shared drive discovery found, not one
	// configured under libraries.
	Discovered bool `json:"discovered,omitempty"`
	// Synced: the index has a tree of the library, of Folders folders and
	// Permissions permissions at Revision.
	Synced          bool      `json:"synced"`
	Folders         int       `json:"folders"`
	Permissions     int       `json:"permissions"`
	Revision        uint64    `json:"revision"`
	LastFullSync    time.Time `json:"lastFullSync,omitzero"`
	LastIncremental time.Time `json:"lastIncrementalSync,omitzero"`
	// LeaseHolder names the process syncing the library now, with an index
	// shared by replicas (this one or another).
	LeaseHolder string `json:"leaseHolder,omitempty"`
	// Push is the status of the library's push feed, in the answer to
	// /status?library=ID when push is on.
	Push *push.FeedStatus `json:"push,omitempty"`
}

// DirectoryStatus is a directory's line in Status.
type DirectoryStatus struct {
	schedule.JobStatus
	LeaseHolder string `json:"leaseHolder,omitempty"`
}

// Refusal is the answer to a request the admin listener refuses.
type Refusal struct {
	Error string `json:"error"`
}

// The modes of POST /sync (its mode parameter).
const (
	modeIncremental = "incremental"
	modeFull        = "full"
)
