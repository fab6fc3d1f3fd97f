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

// listedPages reads a files.list listing's pages with drivelist, in place of
// the client library's decoding (googleclient.WithPageDecoder): the client
// library is left the page's token, and the page the listing gets is the
// one drivelist read. A page drivelist leaves is the client library's to
// read, as before.
type listedPages struct {
	mu   sync.Mutex
	dec  *drivelist.Decoder
	last *drive.FileList // read, not yet taken
	left int             // pages left to the client library
}

func newListedPages() *listedPages { return &listedPages{dec: drivelist.New()} }

// decode is the listing's googleclient.PageDecoder.
func (l *listedPages) decode(body []byte) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	list, err := l.dec.Decode(body)
	if errors.Is(err, drivelist.ErrInvalid) {
		l.last = nil
		return nil, fmt.Errorf("%w: %w", googleclient.ErrInvalidJSON, err)
	}
	if err != nil {
		l.last = nil
		l.left++
		return nil, err
	}
	l.last = list
	return json.Marshal(&drive.FileList{NextPageToken: list.NextPageToken, IncompleteSearch: list.IncompleteSearch, Kind: list.Kind})
}

// reuse gives drivelist back the files of a page taken, for the next.
func (l *listedPages) reuse(list *drive.FileList) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dec.Reuse(list)
}

// take returns the page the client library decoded as list: the one
// drivelist read, if it read it.
func (l *listedPages) take(list *drive.FileList) *drive.FileList {
	l.mu.Lock()
	defer l.mu.Unlock()
	read := l.last
	l.last = nil
	if read == nil || read.NextPageToken != list.NextPageToken || len(list.Files) > 0 {
		return list
	}
	read.ServerResponse = list.ServerResponse
	return read
}
