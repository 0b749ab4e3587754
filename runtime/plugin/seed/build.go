package seed

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/include"
	"github.com/replaycheck/replaycheck/internal/cbuild"
)

// sources are the plugin's C: seed.c (the reference rules), defects.c (the defects), hooks.c (the
// test hooks), grow.c (the growable arrays) and their headers.
//
//go:embed c/*.c c/*.h
var sources embed.FS

// Reference is the name of the reference plugin: the built-in guards' rules, no defect.
const Reference = "reference"

// plugin is one plugin Build knows: its name and the -D flags that select its defect.
type plugin struct {
	name    string
	defines []string
}

// plugins are the plugins Build knows, the reference first.
var plugins = []plugin{
	{Reference, nil},
	{"arena-rollback-on-refusal", []string{"RC_SEED_DEFECT_ARENA_ROLLBACK"}},
	{"retained-free-before-refuse", []string{"RC_SEED_DEFECT_RETAINED_FREE"}},
	{"no-capture-watch", []string{"RC_SEED_DEFECT_NO_CAPTURE_WATCH"}},
	{"pointer-equality-residency", []string{"RC_SEED_DEFECT_POINTER_EQUALITY"}},
	{"no-retained-slot", []string{"RC_SEED_DEFECT_NO_RETAINED_SLOT"}},
}

// Names lists the plugins Build compiles, the reference first, in a fresh slice.
func Names() []string {
	out := make([]string, len(plugins))
	for i, p := range plugins {
		out[i] = p.name
	}
	return out
}

// Defects lists the defective plugins (every name but Reference), in a fresh slice.
func Defects() []string { return Names()[1:] }

// Exports are the entry points every plugin exports, and nothing else: the ABI's three.
func Exports() []string {
	return []string{"rc_runtime_abi_version", "rc_runtime_open", "rc_runtime_close"}
}

// Build writes the plugin sources into a directory under dir, compiles plugin name (Reference or
// one of Defects) with $CC (else cc) into dir/<name>.so, and returns that path. The sources are
// removed after a successful build; a failed build leaves them and says where.
func Build(dir, name string) (string, error) {
	i := slices.IndexFunc(plugins, func(p plugin) bool { return p.name == name })
	if i < 0 {
		return "", fmt.Errorf("seed: no plugin %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	files, cfiles, err := sourceFiles()
	if err != nil {
		return "", err
	}
	files[include.RuntimeABIPath] = include.RuntimeABI
	args := []string{"-I."}
	for _, d := range plugins[i].defines {
		args = append(args, "-D"+d)
	}
	return cbuild.Build(cbuild.Library{
		What: "seed: build " + name, Dir: dir, Name: name + ".so",
		Sources: files,
		Args:    append(args, cfiles...),
	})
}

// sourceFiles returns the plugins' C sources by file name (the .c files and their headers, in a
// fresh map) and the names of the .c files, sorted: what a plugin is compiled from, with the ABI
// header and the defect's define.
func sourceFiles() (map[string][]byte, []string, error) {
	entries, err := fs.ReadDir(sources, "c")
	if err != nil {
		return nil, nil, fmt.Errorf("seed: %w", err)
	}
	files := make(map[string][]byte, len(entries)+1)
	var cfiles []string
	for _, e := range entries {
		data, err := fs.ReadFile(sources, path.Join("c", e.Name()))
		if err != nil {
			return nil, nil, fmt.Errorf("seed: %w", err)
		}
		files[e.Name()] = data
		if strings.HasSuffix(e.Name(), ".c") {
			cfiles = append(cfiles, e.Name())
		}
	}
	return files, cfiles, nil
}
