package catalog

import (
	"sync/atomic"

	fm "github.com/foldermirror/foldermirror"
)

// A large library is read on two cores: the index's goroutine copies each
// folder it hands the loader (Folder) into a batch, and a goroutine of the
// loader's adds them (loader.add), batch after batch. Adding a folder
// looks its ID and its parent's up among a million others, far apart in
// memory: it takes about twice as long as the index takes to read it.

// pipeFrom is the size of a library, in folders, from which it is read on
// two cores. (A variable, so that tests can read small ones so.)
var pipeFrom = releaseFrom

// pipe takes folders to a loader's goroutine in batches.
type pipe struct {
	full, free chan *batch
	cur        *batch
	// err is the first error of the goroutine, set before failed; done is
	// closed once it has added what it was given.
	err    error
	failed atomic.Bool
	done   chan struct{}
}

// batch is folders copied together: each one's strings end where its
// ends say in bytes, the next one's starting there.
type batch struct {
	bytes   []byte
	folders []batched
}

type batched struct {
	ends  [5]uint32 // of its ID, its parent's, its name, resource key and definition
	set   uint32
	flags uint8
}

// Batches: how many folders each holds, and how many there are.
const (
	batchFolders = 2048
	batches      = 3
)

// startPipe starts the goroutine that adds the folders ld.pipe is given.
func (ld *loader) startPipe() {
	p := &pipe{full: make(chan *batch, batches), free: make(chan *batch, batches), done: make(chan struct{})}
	for range batches {
		p.free <- &batch{bytes: make([]byte, 0, batchFolders*(bytesPerID+bytesPerID+bytesPerName)),
			folders: make([]batched, 0, batchFolders)}
	}
	p.cur = <-p.free
	ld.pipe = p
	go func() {
		defer close(p.done)
		for b := range p.full {
			if !p.failed.Load() {
				p.addAll(ld, b)
			}
			b.bytes, b.folders = b.bytes[:0], b.folders[:0]
			p.free <- b
		}
	}()
}

// addAll adds a batch's folders to ld, noting the first error.
func (p *pipe) addAll(ld *loader, b *batch) {
	start := uint32(0)
	var s [5]string
	for _, f := range b.folders {
		for i, end := range f.ends {
			s[i], start = unsafeString(b.bytes[start:end]), end
		}
		if err := ld.add(s[0], s[1], s[2], s[3], s[4], f.set, f.flags); err != nil {
			p.err = err
			p.failed.Store(true)
			return
		}
	}
}

// put copies a folder into the batch being filled, and hands the batch to
// the goroutine once full; it returns the goroutine's error if it failed.
func (p *pipe) put(f *fm.Folder, set uint32) error {
	if p.failed.Load() {
		return p.err
	}
	b := p.cur
	bf := batched{set: set, flags: folderFlags(f)}
	for i, s := range [5]string{f.ID, f.ParentID, f.Name, f.ResourceKey, f.DefinitionID} {
		b.bytes = append(b.bytes, s...)
		bf.ends[i] = uint32(len(b.bytes))
	}
	b.folders = append(b.folders, bf)
	if len(b.folders) == batchFolders {
		p.full <- b
		p.cur = <-p.free
	}
	return nil
}

// wait hands the last batch to the goroutine, and returns once it has
// added every folder: its error, if it failed. The loader is then read by
// one goroutine again.
func (ld *loader) wait() error {
	p := ld.pipe
	if p == nil {
		return nil
	}
	ld.pipe = nil
	p.full <- p.cur
	close(p.full)
	<-p.done
	return p.err
}
