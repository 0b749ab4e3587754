package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/acl"
	"github.com/replaycheck/replaycheck/device/backends"
	"github.com/replaycheck/replaycheck/device/cuda"
	"github.com/replaycheck/replaycheck/internal/bytesize"
)

var devicesCommand = &command{
	name:    "devices",
	summary: "list every backend, whether it is usable here and why not, and its devices",
	detail: `List every backend replaycheck defines (sim, acl, cuda): whether this binary can use it on this
host and, when not, exactly why (built without cgo, the library paths tried, a symbol missing, a
library without a driver, no device) and, for acl and cuda, how to load a driver library from a path the
dynamic loader does not search (` + acl.EnvLibrary + `, ` + cuda.EnvLibrary + `); for each device its name, memory, driver and runtime
versions and the platform key its baselines go under, and what its library lacks that a device
would otherwise do ("without graph reading: ..."). Exit 0 whatever is found; 2 for usage errors.`,
	flags: func(fs *flag.FlagSet, env Env) func(context.Context, []string) int {
		format := fs.String("format", "text", "output format: text or json")
		return func(ctx context.Context, args []string) int {
			if len(args) > 0 {
				fmt.Fprintf(env.Stderr, "replaycheck devices: takes no arguments, got %q\n", args)
				return ExitUsage
			}
			if *format != "text" && *format != "json" {
				fmt.Fprintf(env.Stderr, "replaycheck devices: --format: %q is not text or json\n", *format)
				return ExitUsage
			}
			inv := inventory(ctx)
			if *format == "json" {
				enc := json.NewEncoder(env.Stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(map[string]any{"backends": inv}); err != nil {
					fmt.Fprintf(env.Stderr, "replaycheck devices: %v\n", err)
					return ExitFail
				}
				return ExitOK
			}
			writeInventory(env, inv)
			return ExitOK
		}
	},
}

// backendState is one backend as `devices` reports it.
type backendState struct {
	Name   string `json:"name"`
	Usable bool   `json:"usable"`
	// Source is where the backend comes from (built in, or the library it loaded).
	Source string `json:"source,omitempty"`
	// Reason says why the backend is not usable, or what went wrong listing a device.
	Reason string `json:"reason,omitempty"`
	// Hint says how to point the backend at a driver library the loader does not find, when
	// that may be why it is unusable.
	Hint    string              `json:"hint,omitempty"`
	Devices []device.DeviceInfo `json:"devices"`
}

// libraries are the environment variable that names each device backend's driver library, and
// the library's usual name.
var libraries = map[string]struct{ env, lib string }{
	"acl":  {acl.EnvLibrary, "libascendcl.so"},
	"cuda": {cuda.EnvLibrary, "libcuda.so.1"},
}

// libraryHint says how to load backend name's library from a path the loader does not search.
func libraryHint(name string) string {
	l, ok := libraries[name]
	if !ok {
		return ""
	}
	return fmt.Sprintf("to load one the dynamic loader does not find: %s=/path/to/%s replaycheck devices", l.env, l.lib)
}

// inventory opens every known backend, lists its devices and closes it.
func inventory(ctx context.Context) []backendState {
	var out []backendState
	for _, name := range backends.Known() {
		st := backendState{Name: name, Devices: []device.DeviceInfo{}}
		if why := backends.Unavailable(name); why != "" {
			st.Reason = why
			out = append(out, st)
			continue
		}
		b, err := backends.Open(name, backends.Config{})
		if err != nil {
			st.Reason, st.Hint = err.Error(), libraryHint(name)
			out = append(out, st)
			continue
		}
		st.Source = b.Source()
		n, err := b.Devices(ctx)
		switch {
		case err != nil:
			st.Reason = err.Error()
		case n == 0:
			st.Reason = "no device"
		}
		for i := range n {
			info, err := b.Info(ctx, i)
			if err != nil {
				st.Reason = fmt.Sprintf("device %d: %v", i, err)
				break
			}
			st.Devices = append(st.Devices, info)
		}
		st.Usable = st.Reason == ""
		if err := b.Close(); err != nil && st.Reason == "" {
			st.Reason, st.Usable = "closing: "+err.Error(), false
		}
		out = append(out, st)
	}
	return out
}

func writeInventory(env Env, inv []backendState) {
	nameW := 0
	for _, st := range inv {
		nameW = max(nameW, len(st.Name))
	}
	for _, st := range inv {
		state, detail := "usable", st.Source
		if !st.Usable {
			state, detail = "unavailable", st.Reason
		}
		fmt.Fprintf(env.Stdout, "%-*s  %-11s  %s\n", nameW, st.Name, state, detail)
		if st.Hint != "" {
			fmt.Fprintf(env.Stdout, "%*s  %-11s  %s\n", nameW, "", "", st.Hint)
		}
		for _, d := range st.Devices {
			parts := []string{bytesize.Format(d.Memory)}
			if d.Driver != "" {
				parts = append(parts, "driver "+d.Driver)
			}
			if d.Runtime != "" {
				parts = append(parts, "runtime "+d.Runtime)
			}
			parts = append(parts, "platform "+d.Platform)
			fmt.Fprintf(env.Stdout, "%*s  device %d: %s; %s\n", nameW, "", d.Index, d.Name, strings.Join(parts, ", "))
			for _, l := range d.Lacks {
				fmt.Fprintf(env.Stdout, "%*s    without %s\n", nameW, "", l)
			}
		}
	}
}
