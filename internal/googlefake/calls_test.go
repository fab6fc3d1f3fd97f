package googlefake_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/foldermirror/foldermirror/internal/wait"
)

func TestCallsCountEveryMethod(t *testing.T) {
	s := newFake(t)
	d := s.CreateSharedDrive("Team", alice)
	f := s.CreateFolder(alice, "", "f")
	svc := driveAs(t, s, alice)
	s.ResetCalls()

	if _, err := svc.Files.List().Do(); err != nil {
		t.Fatal(err)
	}
	_, _ = svc.Files.Get(f).Do()
	_, _ = svc.Files.Get("missing").Do() // failures count too
	_, _ = svc.Permissions.List(f).Do()
	_, _ = svc.Drives.Get(d).Do()
	_, _ = svc.Drives.List().Do()
	tok, _ := svc.Changes.GetStartPageToken().Do()
	_, _ = svc.Changes.List(tok.StartPageToken).Do()
	fetchJWKS(t, s)

	want := map[string]int{
		"oauth2.token": 1, "oauth2.certs": 1, "drive.files.list": 1, "drive.files.get": 2,
		"drive.permissions.list": 1, "drive.drives.get": 1, "drive.drives.list": 1, "drive.changes.getStartPageToken": 1, "drive.changes.list": 1,
	}
	calls := s.Calls()
	if !maps.Equal(calls, want) {
		t.Errorf("calls %v\nwant %v", calls, want)
	}
	calls["drive.files.list"] = 100
	if s.CallCount("drive.files.list") != 1 {
		t.Error("Calls does not return a copy")
	}
	s.ResetCalls()
	if len(s.Calls()) != 0 || s.CallCount("drive.files.get") != 0 {
		t.Errorf("after reset: %v", s.Calls())
	}
}

func TestLatency(t *testing.T) {
	s := newFake(t)
	svc := driveAs(t, s, alice)
	if _, err := svc.Files.Get("root").Do(); err != nil { // fetches the token
		t.Fatal(err)
	}
	s.SetLatency(100 * time.Millisecond)
	start := time.Now()
	if _, err := svc.Files.Get("root").Do(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("request took %v with 100ms latency", d)
	}
}

func TestErrorBodies(t *testing.T) {
	s := newFake(t)
	svc := driveAs(t, s, alice)
	tests := []struct {
		name    string
		do      func() error
		code    int
		reason  string
		message string
	}{
		{"file not found", func() error { _, err := svc.Files.Get("nope").Do(); return err }, 404, "notFound", "File not found: nope."},
		{"permissions of unknown file", func() error { _, err := svc.Permissions.List("nope").Do(); return err }, 404, "notFound", "File not found: nope."},
		{"unknown drive", func() error { _, err := svc.Drives.Get("0Anope").Do(); return err }, 404, "notFound", "Shared drive not found: 0Anope."},
		{"bad query", func() error { _, err := svc.Files.List().Q("nonsense").Do(); return err }, 400, "invalid", "Invalid Value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gerr := wantAPIError(t, tt.do(), tt.code, tt.reason)
			if gerr.Message != tt.message || gerr.Errors[0].Message != tt.message {
				t.Errorf("message %q / %q, want %q", gerr.Message, gerr.Errors[0].Message, tt.message)
			}
		})
	}
}

func TestMutatorsPanicOnUnknownIDs(t *testing.T) {
	s := newFake(t)
	f := s.CreateFolder(alice, "", "f")
	child := s.CreateFolder(alice, f, "child")
	d := s.CreateSharedDrive("Team", alice)
	for name, fn := range map[string]func(){
		"Rename":               func() { s.Rename("nope", "x") },
		"Move":                 func() { s.Move(f, "nope") },
		"Move cycle":           func() { s.Move(f, child) },
		"Share":                func() { s.Share("nope", googlefake.Permission{Type: "anyone", Role: "reader"}) },
		"Share role":           func() { s.Share(f, googlefake.Permission{Type: "anyone", Role: "boss"}) },
		"Unshare":              func() { s.Unshare(f, "12345") },
		"Delete":               func() { s.Delete("nope") },
		"RootOf":               func() { s.RootOf("nobody@example.com") },
		"CreateFolder":         func() { s.CreateFolder(alice, "nope", "x") },
		"ModifyDrive":          func() { s.ModifyDrive("nope", nil) },
		"Delete a root":        func() { s.Delete(s.RootOf(alice)) },
		"Delete a drive":       func() { s.Delete(d) },
		"DeleteSharedDrive":    func() { s.DeleteSharedDrive(f) },
		"HideDrive":            func() { s.HideDrive("nope", alice, true) },
		"HideDrive non-member": func() { s.HideDrive(d, bob, true) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			fn()
		})
	}
}

func TestConcurrentUse(t *testing.T) {
	s := newFake(t)
	svc := driveAs(t, s, alice)
	top := s.CreateFolder(alice, "", "top")
	done := make(chan error)
	for i := range 4 {
		go func() {
			for j := range 20 {
				id := s.CreateFolder(alice, top, fmt.Sprint(i, "-", j))
				s.Share(id, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: bob})
			}
			done <- nil
		}()
		go func() {
			for range 20 {
				if _, err := svc.Files.List().Fields("files(id,permissions(id))").Do(); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := wait.Receive(t, done, "a writer's or a reader's end"); err != nil {
			t.Error(err)
		}
	}
	if got := len(listAll(t, svc.Files.List().Q("'"+top+"' in parents").Fields("nextPageToken,files(id)"))); got != 80 {
		t.Errorf("%d children, want 80", got)
	}
}
