package config

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with a configuration.
type Problem struct {
	// Key is the full path of the key, such as libraries[1].rootFolderId, or
	// the FOLDERMIRROR_* variable that set it; it is empty for a problem of
	// the whole file, such as a YAML syntax error.
	Key string
	// Message says what is wrong and what is expected, with the line of the
	// key when it is known.
	Message string
}

// ProblemsError is the error of Parse and Load for an invalid configuration:
// it lists every problem found.
type ProblemsError struct {
	// Path is the config file, as given to Parse or Load.
	Path     string
	Problems []Problem
}

// Error returns one line per problem, "KEY: MESSAGE", each prefixed by the
// file name.
func (e *ProblemsError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		var b strings.Builder
		if e.Path != "" {
			b.WriteString(e.Path + ": ")
		}
		if p.Key != "" {
			b.WriteString(p.Key + ": ")
		}
		b.WriteString(p.Message)
		lines[i] = b.String()
	}
	return strings.Join(lines, "\n")
}

// checker collects the problems of one configuration.
type checker struct {
	problems []Problem
	lines    map[string]int    // the line of each key path present in the file
	env      map[string]string // the FOLDERMIRROR_* variable that set a key path
}

func newChecker() *checker {
	return &checker{lines: map[string]int{}, env: map[string]string{}}
}

// report records a problem as it is.
func (ck *checker) report(key, msg string) {
	ck.problems = append(ck.problems, Problem{Key: key, Message: msg})
}

// add records a problem of the value of a key path. It names the variable
// that set the value, if any, or else gives the line of the key in the file.
func (ck *checker) add(key, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if name, ok := ck.env[key]; ok {
		ck.report(name, msg)
		return
	}
	if line := ck.line(key); line > 0 {
		msg += fmt.Sprintf(" (line %d)", line)
	}
	ck.report(key, msg)
}

// line returns the line of key in the file or, when the key is absent, that
// of its nearest enclosing key; 0 if none is known.
func (ck *checker) line(key string) int {
	for key != "" {
		if line, ok := ck.lines[key]; ok {
			return line
		}
		key = key[:max(strings.LastIndexAny(key, ".["), 0)]
	}
	return 0
}

// join returns the path of key inside the mapping at path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// index returns the path of element i of the list at path.
func index(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}
