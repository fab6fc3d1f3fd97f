package auth

import "testing"

func TestIsJWT(t *testing.T) {
	for token, want := range map[string]bool{
		"a.b.c": true, "a.b.": true, "eyJ-_9.x_Y.sig": true,
		"": false, "a.b": false, "a..c": false, ".b.c": false, "a.b.c.d": false, "a.b.c=": false,
		"a.b c.d": false, "ya29.token": false, "a.b.c.": false,
	} {
		if got := isJWT(token); got != want {
			t.Errorf("isJWT(%q) = %v, want %v", token, got, want)
		}
	}
}
