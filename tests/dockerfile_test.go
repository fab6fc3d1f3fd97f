package tests

import (
	"encoding/json"
	"go/build"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/config"
)

// instruction is a Dockerfile instruction: its keyword, upper-cased, and
// its arguments, continuation lines joined.
type instruction struct {
	keyword, args string
}

// stage is a build stage: its name (after AS) and its instructions.
type stage struct {
	name         string
	instructions []instruction
}

// parseDockerfile splits a Dockerfile into stages.
func parseDockerfile(text string) []stage {
	var stages []stage
	var logical string
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if logical == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cont, ok := strings.CutSuffix(trimmed, `\`); ok {
			logical += cont + " "
			continue
		}
		logical += trimmed
		keyword, args, _ := strings.Cut(logical, " ")
		in := instruction{keyword: strings.ToUpper(keyword), args: strings.TrimSpace(args)}
		logical = ""
		if in.keyword == "FROM" {
			name := ""
			if f := strings.Fields(in.args); len(f) == 3 && strings.EqualFold(f[1], "AS") {
				name = f[2]
			}
			stages = append(stages, stage{name: name})
		}
		if len(stages) > 0 {
			stages[len(stages)-1].instructions = append(stages[len(stages)-1].instructions, in)
		}
	}
	return stages
}

// all returns the arguments of every instruction of the keyword.
func (s stage) all(keyword string) []string {
	var args []string
	for _, in := range s.instructions {
		if in.keyword == keyword {
			args = append(args, in.args)
		}
	}
	return args
}

// env returns the variables the stage's ENV instructions set (KEY=VALUE
// form).
func (s stage) env() map[string]string {
	env := map[string]string{}
	for _, args := range s.all("ENV") {
		for _, kv := range strings.Fields(args) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = strings.Trim(v, `"`)
			}
		}
	}
	return env
}

// execForm decodes a JSON array of an instruction (exec form).
func execForm(t *testing.T, what, args string) []string {
	t.Helper()
	var argv []string
	if err := json.Unmarshal([]byte(args), &argv); err != nil || len(argv) == 0 {
		t.Fatalf("%s %s: want the exec form, a JSON array (the image has no shell): %v", what, args, err)
	}
	return argv
}

var nonroot = regexp.MustCompile(`^(nonroot|65532)(:(nonroot|65532))?$`)

// The image's volume exists, owned by nonroot, which the daemon runs as;
// dataDir points there; its HEALTHCHECK runs foldermirror healthcheck, and
// its commands parse with the image's environment.
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	stages := parseDockerfile(string(data))
	if len(stages) < 2 {
		t.Fatalf("Dockerfile: %d stages; want a build stage and the image", len(stages))
	}
	final := stages[len(stages)-1]
	byName := map[string]stage{}
	for _, s := range stages {
		byName[s.name] = s
	}

	users := final.all("USER")
	if len(users) == 0 || !nonroot.MatchString(users[len(users)-1]) {
		t.Errorf("USER %q; want nonroot", users)
	}
	volumes := final.all("VOLUME")
	if len(volumes) != 1 {
		t.Fatalf("VOLUME %q; want one", volumes)
	}
	volume := execForm(t, "VOLUME", volumes[0])[0]
	env := final.env()
	if env["FOLDERMIRROR_DATADIR"] != volume {
		t.Errorf("FOLDERMIRROR_DATADIR %q; want the volume, %s", env["FOLDERMIRROR_DATADIR"], volume)
	}
	checkVolumeMade(t, final, byName, volume)

	// The image's environment makes dataDir the volume.
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
		t.Setenv(k, v)
	}
	cfg, err := config.Parse([]byte("domains: [{name: example.com}]\n"), filepath.Join(t.TempDir(), "config.yaml"), environ)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DataDir != volume {
		t.Errorf("with the image's environment, dataDir is %s; want %s", cfg.DataDir, volume)
	}

	// ENTRYPOINT, CMD and HEALTHCHECK are command lines foldermirror takes,
	// with the image's environment: its $FOLDERMIRROR_CONFIG set (to a file
	// that is not there, so that the commands stop at reading it).
	if env["FOLDERMIRROR_CONFIG"] != "" {
		t.Setenv("FOLDERMIRROR_CONFIG", filepath.Join(t.TempDir(), "config.yaml"))
	}
	entry := execForm(t, "ENTRYPOINT", last(t, final, "ENTRYPOINT"))
	binary := entry[0]
	if !slices.ContainsFunc(final.all("COPY"), func(args string) bool { return strings.HasSuffix(args, " "+binary) }) {
		t.Errorf("ENTRYPOINT %s: no COPY puts the binary there", binary)
	}
	checkParses(t, "CMD", execForm(t, "CMD", last(t, final, "CMD")))
	health := last(t, final, "HEALTHCHECK")
	_, probe, ok := strings.Cut(health, "CMD ")
	if !ok {
		t.Fatalf("HEALTHCHECK %s: want CMD [...]", health)
	}
	argv := execForm(t, "HEALTHCHECK CMD", probe)
	if argv[0] != binary || len(argv) < 2 || argv[1] != "healthcheck" {
		t.Errorf("HEALTHCHECK runs %q; want %s healthcheck", argv, binary)
	}
	checkParses(t, "HEALTHCHECK", argv[1:])
}

// checkVolumeMade checks that a COPY from a build stage makes the volume's
// directory, owned by nonroot, from a directory that stage made.
func checkVolumeMade(t *testing.T, final stage, stages map[string]stage, volume string) {
	t.Helper()
	copyChown := regexp.MustCompile(`^--from=(\S+)\s+--chown=(\S+)\s+(\S+)\s+(\S+)$`)
	for _, args := range final.all("COPY") {
		m := copyChown.FindStringSubmatch(args)
		if m == nil || strings.TrimSuffix(m[4], "/") != volume {
			continue
		}
		from, owner, src := m[1], m[2], strings.TrimSuffix(m[3], "/")
		if !nonroot.MatchString(owner) {
			t.Errorf("COPY %s: owned by %s; want nonroot", args, owner)
		}
		made := slices.ContainsFunc(stages[from].all("RUN"), func(run string) bool {
			return strings.Contains(run, "mkdir") && slices.Contains(strings.Fields(run), src)
		})
		if !made {
			t.Errorf("COPY %s: stage %q makes no directory %s", args, from, src)
		}
		return
	}
	t.Errorf("no COPY --from=STAGE --chown=nonroot SRC %s makes the volume's directory", volume)
}

// checkParses checks that the built binary takes args as a command line:
// it does not exit 2, foldermirror's status for a wrong command line, with
// its usage.
func checkParses(t *testing.T, what string, args []string) {
	t.Helper()
	if r := runBinary(t, args...); r.code == 2 || strings.Contains(r.stderr, "usage:") {
		t.Errorf("%s %q: exit status %d\n%s", what, args, r.code, r.said())
	}
}

// last returns the arguments of the stage's last instruction of keyword.
func last(t *testing.T, s stage, keyword string) string {
	t.Helper()
	all := s.all(keyword)
	if len(all) == 0 {
		t.Fatalf("the image has no %s", keyword)
	}
	return all[len(all)-1]
}

// The build stage copies only what the binary is built from: the module
// files and the sources of the packages it imports (with the files they
// embed), never the whole tree; and the .dockerignore leaves all of that
// in the build context. (What it keeps out, the deploy directory's secrets
// above all, TestComposeFile checks.)
func TestDockerfileCopiesOnlyTheSources(t *testing.T) {
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	build := parseDockerfile(string(data))[0]
	var sources []string
	for _, args := range build.all("COPY") {
		if strings.HasPrefix(args, "--from=") {
			continue
		}
		fields := strings.Fields(args)
		for _, src := range fields[:len(fields)-1] {
			if !strings.HasPrefix(src, "--") {
				sources = append(sources, path.Clean(src))
			}
		}
	}
	needed := neededFiles(t)
	dockerignore := readIgnore(t, filepath.Join("..", ".dockerignore"))
	for _, f := range needed {
		if dockerignore.ignores(f, false) {
			t.Errorf(".dockerignore leaves %s out of the build context; the build needs it", f)
		}
		if !slices.ContainsFunc(sources, func(src string) bool { return copies(src, f) }) {
			t.Errorf("no COPY of the build stage copies %s (sources %q)", f, sources)
		}
	}
	for _, src := range sources {
		switch {
		case src == ".":
			t.Errorf("COPY . copies the whole tree, whatever lies in it; copy the module files and the packages' directories only")
		case !slices.ContainsFunc(needed, func(f string) bool { return copies(src, f) }):
			t.Errorf("COPY %s: the build needs none of it", src)
		}
	}
}

// copies tells whether a COPY source (a file, a glob or a directory)
// copies the file at rel.
func copies(src, rel string) bool {
	if ok, _ := path.Match(src, rel); ok || src == "." {
		return true
	}
	return strings.HasPrefix(rel, src+"/")
}

// neededFiles returns the files, relative to the repository's root, that
// building ./cmd/foldermirror reads: go.mod, go.sum, and the Go files and
// embedded files of every package of the module it imports.
func neededFiles(t *testing.T) []string {
	t.Helper()
	root := ".."
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	module := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(mod), "\n", 2)[0], "module"))
	files := []string{"go.mod", "go.sum"}
	seen := map[string]bool{}
	queue := []string{"cmd/foldermirror"}
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		if seen[dir] {
			continue
		}
		seen[dir] = true
		pkg, err := build.ImportDir(filepath.Join(root, dir), 0)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, f := range pkg.GoFiles {
			files = append(files, path.Join(dir, f))
		}
		for _, pattern := range pkg.EmbedPatterns {
			matches, _ := filepath.Glob(filepath.Join(root, dir, pattern))
			for _, m := range matches {
				rel, _ := filepath.Rel(root, m)
				files = append(files, filepath.ToSlash(rel))
			}
		}
		for _, imp := range pkg.Imports {
			if imp == module {
				queue = append(queue, ".")
			} else if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				queue = append(queue, rel)
			}
		}
	}
	for i, f := range files {
		files[i] = path.Clean(f)
	}
	return files
}
