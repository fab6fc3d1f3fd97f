package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestDemo runs the demo as a newcomer would and follows every curl line it
// prints: each answers, and each user sees something different.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	c := &demoCommand{stdout: &out, stderr: io.Discard}
	if err := c.ParseFlags([]string{"--listen", "127.0.0.1:0", "--folders", "150"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	text := out.String()

	tokens := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z]+)='([^']+)'$`).FindAllStringSubmatch(text, -1) {
		tokens[m[1]] = m[2]
	}
	if len(tokens) < 3 {
		t.Fatalf("the demo printed %d tokens:\n%s", len(tokens), text)
	}
	curls := regexp.MustCompile(`curl -s -H "Authorization: Bearer \$([A-Z]+)" +'([^']+)'`).FindAllStringSubmatch(text, -1)
	if len(curls) < 6 {
		t.Fatalf("the demo printed %d curl lines:\n%s", len(curls), text)
	}
	bodies := map[string]string{}
	for _, m := range curls {
		user, url := m[1], m[2]
		status, body := fetch(t, url, tokens[user])
		want := http.StatusOK
		if user == "PAT" && strings.Contains(url, "lib-sales") {
			want = http.StatusNotFound
		}
		if status != want {
			t.Errorf("%s %s: %d, want %d: %s", user, url, status, want, body)
		}
		bodies[user+" "+url] = body
	}
	base := strings.Split(curls[0][2], "/folder/")[0]
	topOfEng := base + "/folder/v1/libraries/lib-eng/folders/children?onlyDirectChildren=true"
	if bodies["ALICE "+topOfEng] == bodies["CAROL "+topOfEng] || !strings.Contains(bodies["CAROL "+topOfEng], `"Handbook"`) {
		t.Errorf("alice and carol should see different parts of Engineering:\n%s\n%s", bodies["ALICE "+topOfEng], bodies["CAROL "+topOfEng])
	}
}

func fetch(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
