package foldermirror_test

import (
	"slices"
	"testing"

	fm "github.com/foldermirror/foldermirror"
)

func TestResolveGroups(t *testing.T) {
	alpha := &fm.DirectorySnapshot{Domain: "alpha.example", DirectGroups: map[string][]string{
		"ann@alpha.example":   {"leads@alpha.example"},
		"leads@alpha.example": {"all@alpha.example"},
		"bea@beta.example":    {"guests@alpha.example"},
		// A cycle across domains: ring@alpha ⊂ ring@beta ⊂ ring@alpha.
		"ring@beta.example": {"ring@alpha.example"},
		"ron@alpha.example": {"ring@alpha.example"},
		// A group containing itself.
		"self@alpha.example": {"self@alpha.example"},
		"sam@alpha.example":  {"self@alpha.example"},
	}}
	beta := &fm.DirectorySnapshot{Domain: "beta.example", DirectGroups: map[string][]string{
		"leads@alpha.example":  {"eng@beta.example"},   // alpha's group in beta's
		"guests@alpha.example": {"eng@beta.example"},   // and the other way round:
		"eng@beta.example":     {"staff@beta.example"}, // beta's group holds alpha's, which holds beta's user
		"ring@alpha.example":   {"ring@beta.example"},
		"bob@beta.example":     {"ring@beta.example", "eng@beta.example", "eng@beta.example"},
		"outside@gamma.org":    {"eng@beta.example"}, // unreadable: no members of its own
	}}
	tests := []struct {
		name   string
		dirs   map[string]*fm.DirectorySnapshot
		member string
		want   []string
	}{
		{"alpha's user through beta's groups", both(alpha, beta), "ann@alpha.example",
			[]string{"all@alpha.example", "eng@beta.example", "leads@alpha.example", "staff@beta.example"}},
		{"beta's user through alpha's group in beta's", both(alpha, beta), "bea@beta.example",
			[]string{"eng@beta.example", "guests@alpha.example", "staff@beta.example"}},
		{"a cycle across domains, entered from alpha", both(alpha, beta), "ron@alpha.example",
			[]string{"ring@alpha.example", "ring@beta.example"}},
		{"a cycle across domains, entered from beta, duplicates once", both(alpha, beta), "bob@beta.example",
			[]string{"eng@beta.example", "ring@alpha.example", "ring@beta.example", "staff@beta.example"}},
		{"a group containing itself", both(alpha, beta), "sam@alpha.example", []string{"self@alpha.example"}},
		{"a group's own groups", both(alpha, beta), "leads@alpha.example",
			[]string{"all@alpha.example", "eng@beta.example", "staff@beta.example"}},
		{"alpha alone", only(alpha), "ann@alpha.example", []string{"all@alpha.example", "leads@alpha.example"}},
		{"beta alone: alpha's members not known yet", only(beta), "ann@alpha.example", nil},
		{"not a member", both(alpha, beta), "nobody@alpha.example", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fm.ResolveGroups(tt.dirs)[tt.member]; !slices.Equal(got, tt.want) {
				t.Errorf("groups of %s: %v, want %v", tt.member, got, tt.want)
			}
		})
	}
}

func both(a, b *fm.DirectorySnapshot) map[string]*fm.DirectorySnapshot {
	return map[string]*fm.DirectorySnapshot{a.Domain: a, b.Domain: b}
}

func only(a *fm.DirectorySnapshot) map[string]*fm.DirectorySnapshot {
	return map[string]*fm.DirectorySnapshot{a.Domain: a}
}
