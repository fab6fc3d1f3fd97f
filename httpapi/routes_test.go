package httpapi_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/httpapi"
	"github.com/gin-gonic/gin"
)

// Every route of the API lies under a first segment that config refuses
// for push.address's path. config keeps its own list of those roots
// (config/push.go: it cannot import httpapi), so a route added under a new
// root fails here until config knows it: a push.address under it would
// collide with the route when the API's router is built at start.
func TestPushAddressKeepsOffTheRoutes(t *testing.T) {
	engine, ok := httpapi.New(nil, nil, httpapi.Options{}).Handler().(*gin.Engine)
	if !ok {
		t.Fatal("the API's handler is not its gin.Engine: its routes cannot be read")
	}
	if problem := pushAddressProblem(t, "drive"); problem != "" {
		t.Fatalf("push.address under /drive/, no route's root, refused: %s", problem)
	}
	roots := map[string]string{} // a route under each root
	for _, route := range engine.Routes() {
		root, _, _ := strings.Cut(strings.TrimPrefix(route.Path, "/"), "/")
		if root == "" || strings.ContainsAny(root, ":*") {
			t.Errorf("route %s %s begins with %q: no push.address path can keep off it", route.Method, route.Path, root)
			continue
		}
		roots[root] = route.Path
	}
	if len(roots) == 0 {
		t.Fatal("the API has no route")
	}
	for root, path := range roots {
		if pushAddressProblem(t, root) == "" {
			t.Errorf("push.address https://fm.example.com/%s/push is accepted, though the route %s lies under /%s/: "+
				"add %q to apiPathRoots in config/push.go", root, path, root, root)
		}
	}
}

// pushAddressProblem returns config's problem with a push.address whose
// path is under /root/, "" when it has none.
func pushAddressProblem(t *testing.T, root string) string {
	t.Helper()
	src := "push: {address: 'https://fm.example.com/" + root + "/push'}\n"
	_, err := config.Parse([]byte(src), "foldermirror.yaml", nil)
	var problems *config.ProblemsError
	if !errors.As(err, &problems) {
		t.Fatalf("config.Parse(%q): %v; want its problems (no domain at least)", src, err)
	}
	for _, p := range problems.Problems {
		if p.Key == "push.address" {
			return p.Message
		}
	}
	return ""
}
