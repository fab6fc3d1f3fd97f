package syncer

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/foldermirror/foldermirror/googleclient"
	"github.com/foldermirror/foldermirror/internal/drivelist"
	drive "google.golang.org/api/drive/v3"
)

// decodedPages reads a listing's pages (L: a files.list or changes.list
// page) with drivelist, in place of the client library's decoding
// (googleclient.WithPageDecoder): the client library is left the page's
// tokens, and the page the listing gets (take) is the one drivelist read.
// A page drivelist takes is valid JSON, and nothing it keeps points into
// it; a page it leaves is the client library's to read, as before, once
// googleclient has checked it.
type decodedPages[L any] struct {
	mu  sync.Mutex
	dec *drivelist.Decoder
	// read decodes a page; tokens is a page of its tokens only, what the
	// client library is left; adopt tells whether got is the client
	// library's reading of those of read, and then gives read got's
	// ServerResponse.
	read   func(*drivelist.Decoder, []byte) (*L, error)
	tokens func(*L) *L
	adopt  func(read, got *L) bool
	last   *L  // read, not yet taken
	left   int // pages left to the client library
}

// newListedPages reads the pages of files.list.
func newListedPages() *decodedPages[drive.FileList] {
	return &decodedPages[drive.FileList]{dec: drivelist.New(), read: (*drivelist.Decoder).Decode,
		tokens: func(l *drive.FileList) *drive.FileList {
			return &drive.FileList{NextPageToken: l.NextPageToken, IncompleteSearch: l.IncompleteSearch, Kind: l.Kind}
		},
		adopt: func(read, got *drive.FileList) bool {
			if read.NextPageToken != got.NextPageToken || len(got.Files) > 0 {
				return false
			}
			read.ServerResponse = got.ServerResponse
			return true
		}}
}

// newChangePages reads the pages of changes.list.
func newChangePages() *decodedPages[drive.ChangeList] {
	return &decodedPages[drive.ChangeList]{dec: drivelist.New(), read: (*drivelist.Decoder).DecodeChanges,
		tokens: func(l *drive.ChangeList) *drive.ChangeList {
			return &drive.ChangeList{NextPageToken: l.NextPageToken, NewStartPageToken: l.NewStartPageToken, Kind: l.Kind}
		},
		adopt: func(read, got *drive.ChangeList) bool {
			if read.NextPageToken != got.NextPageToken || read.NewStartPageToken != got.NewStartPageToken || len(got.Changes) > 0 {
				return false
			}
			read.ServerResponse = got.ServerResponse
			return true
		}}
}

// decode is the listing's googleclient.PageDecoder.
func (p *decodedPages[L]) decode(body []byte) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	list, err := p.read(p.dec, body)
	if errors.Is(err, drivelist.ErrInvalid) {
		p.last = nil
		return nil, fmt.Errorf("%w: %w", googleclient.ErrInvalidJSON, err)
	}
	if err != nil {
		p.last = nil
		p.left++
		return nil, err
	}
	p.last = list
	return json.Marshal(p.tokens(list))
}

// take returns the page the client library decoded as got: the one
// drivelist read, if it read it.
func (p *decodedPages[L]) take(got *L) *L {
	p.mu.Lock()
	defer p.mu.Unlock()
	read := p.last
	p.last = nil
	if read == nil || !p.adopt(read, got) {
		return got
	}
	return read
}

// reuse gives drivelist back the files of a files.list page taken, for the
// next.
func (p *decodedPages[L]) reuse(list *drive.FileList) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dec.Reuse(list)
}
