package seed

import (
	"bytes"
	"embed"
	"fmt"
	"github.com/replaycheck/replaycheck/include"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

//go:embed c/seed.c
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

// Flags are the compiler flags every plugin is built with.
var Flags = []string{"-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-shared", "-fPIC", "-pthread", "-fvisibility=hidden"}

// Build writes the plugin sources into a directory under dir, compiles plugin name (Reference or
// one of Defects) with $CC (else cc) into dir/<name>.so, and returns that path. The sources are
// removed after a successful build; a failed build leaves them and says where.
func Build(dir, name string) (string, error) {
	i := slices.IndexFunc(plugins, func(p plugin) bool { return p.name == name })
	if i < 0 {
		return "", fmt.Errorf("seed: no plugin %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("seed: %w", err)
	}
	src, err := os.MkdirTemp(dir, "src-"+name+"-")
	if err != nil {
		return "", fmt.Errorf("seed: %w", err)
	}
	seed, err := sources.ReadFile("c/seed.c")
	if err != nil {
		return "", fmt.Errorf("seed: %w", err)
	}
	for f, data := range map[string][]byte{"seed.c": seed, include.RuntimeABIPath: include.RuntimeABI} {
		path := filepath.Join(src, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", fmt.Errorf("seed: %w", err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return "", fmt.Errorf("seed: %w", err)
		}
	}
	out, err := filepath.Abs(filepath.Join(dir, name+".so"))
	if err != nil {
		return "", fmt.Errorf("seed: %w", err)
	}
	args := slices.Clone(Flags)
	args = append(args, "-I.", "-Wl,-soname,"+name+".so", "-o", out)
	for _, d := range plugins[i].defines {
		args = append(args, "-D"+d)
	}
	args = append(args, "seed.c")
	cc := Compiler()
	cmd := exec.Command(cc[0], append(cc[1:], args...)...)
	cmd.Dir = src
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("seed: build %s in %s: %s %s: %w\n%s", name, src, cc[0], strings.Join(append(cc[1:], args...), " "), err, stderr.String())
	}
	if err := os.RemoveAll(src); err != nil {
		return "", fmt.Errorf("seed: %w", err)
	}
	return out, nil
}

// Compiler is $CC split into words, or cc.
func Compiler() []string {
	if cc := strings.Fields(os.Getenv("CC")); len(cc) > 0 {
		return cc
	}
	return []string{"cc"}
}
