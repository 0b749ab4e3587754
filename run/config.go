package run

import (
	"errors"
	"flag"
	"fmt"
	"github.com/replaycheck/replaycheck/internal/plural"
	"github.com/replaycheck/replaycheck/runtime"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/backends"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/runtime/guard"
	"github.com/replaycheck/replaycheck/runtime/plugin"
	"github.com/replaycheck/replaycheck/verdict"
)

// Environment variables that set defaults (Defaults); a flag given on a command line wins.
const (
	EnvBackend  = "REPLAYCHECK_BACKEND"
	EnvProfile  = "REPLAYCHECK_PROFILE"
	EnvReplays  = "REPLAYCHECK_REPLAYS"
	EnvSeed     = "REPLAYCHECK_SEED"
	EnvModes    = "REPLAYCHECK_MODES"
	EnvGuards   = "REPLAYCHECK_GUARDS"
	EnvBaseline = "REPLAYCHECK_BASELINE"
	EnvRuntime  = "REPLAYCHECK_RUNTIME"
	EnvShard    = "REPLAYCHECK_SHARD"
	// EnvFault (faults.go) is --fault's.
)

// Config is everything a run is chosen by: where it runs (backend, profile, seed, memory, library),
// what is under test (a runtime plugin or the built-in guards), what it selects (modes, guards,
// replays, probe ids, the --run pattern, a shard) and how it judges and keeps results (baseline,
// timelines). Its JSON form is the journal header's "config" (see the package doc); the fields
// that cannot be written (a RuntimeUnderTest, guard switches) are left out of it.
type Config struct {
	Backend string `json:"backend"`
	// Profile is the simulator platform profile; "" is backends.DefaultProfile. Execute takes one;
	// ExecutePlan takes a comma-separated list ("cann,cuda") and makes one run of each.
	Profile string `json:"profile,omitempty"`
	// Plan is every profile of the invocation a run is one of, in order, when there are several:
	// ExecutePlan sets it in each run's configuration, so a journal knows the runs it still lacks.
	Plan    []string `json:"plan,omitempty"`
	Seed    uint64   `json:"seed,omitempty"`
	Memory  int64    `json:"memory,omitempty"`  // simulated device memory in bytes; 0 the simulator's
	Library string   `json:"library,omitempty"` // driver library of a device backend; "" searches

	// Runtime is the path of a runtime plugin to put under the probes ("": the built-in guards).
	// RuntimeUnderTest, when set, is used instead and Runtime only names it.
	Runtime          string             `json:"runtime,omitempty"`
	RuntimeUnderTest *runtime.UnderTest `json:"-"`
	// Guard configures the built-in guards (negative controls only).
	Guard guard.Options `json:"-"`
	// workerGrace replaces WorkerGrace for the isolated instances of the run when set (tests only,
	// through export_test.go's WithWorkerGrace).
	workerGrace *time.Duration
	// CheckSlotLog checks the runtime's slot log against every slot before every guarded call
	// (capture.Options.CheckSlotLog): for the author of a plugin's slots_changed.
	CheckSlotLog bool `json:"check_slot_log,omitempty"`

	Timeout time.Duration `json:"timeout_ns"` // time limit of one instance
	Replays int           `json:"replays,omitempty"`
	Modes   string        `json:"modes,omitempty"`  // comma-separated capture modes; "" each probe's own
	Guards  string        `json:"guards,omitempty"` // off, on or both ("": both)
	Run     string        `json:"run,omitempty"`    // regular expression over instance ids
	Probes  []string      `json:"probes,omitempty"` // exact probe ids; nil: every probe
	Shard   Shard         `json:"shard,omitzero"`

	// Baseline is the platform baseline choice: auto (or ""), none, or a file.
	Baseline string `json:"baseline,omitempty"`
	// Paths are the probe files and directories; auto looks for baselines/ in each (a file's
	// directory), and Resume loads them again. Relative paths are taken from the working directory.
	Paths []string `json:"paths,omitempty"`
	// Timelines is failed (keep the timelines of instances that did not pass; "" too) or all.
	Timelines string `json:"timelines,omitempty"`

	// Faults are injected into every selected instance (KIND@N, probes.Fault; faults.go).
	Faults []string `json:"faults,omitempty"`
	// Isolate runs each instance in a child process (isolate.go), so a crash in a driver library
	// or a runtime plugin ends that instance in error and the run goes on.
	Isolate bool `json:"isolate,omitempty"`
	// Worker is the child's command line; nil is this executable (with EnvWorker set). For tests.
	Worker []string `json:"-"`

	// Version is the front end's version, written in reports and journal headers ("" is dev).
	Version string `json:"-"`

	// envErrs are malformed environment defaults by setting name, reported by Check unless the
	// setting was given explicitly (Set).
	envErrs map[string]error
	// fromEnv names the variable each setting's value came from, until Set says a flag gave it:
	// a value Check rejects is then blamed on the variable, not on a flag nobody typed.
	fromEnv map[string]string
	// resumed is set for the runs of a Resume: they keep what their journal began with.
	resumed bool
}

// Defaults is the configuration before any flag: the built-in defaults (backend sim, profile
// backends.DefaultProfile, guards both, baseline auto, timelines failed, a minute per instance),
// each replaced by its REPLAYCHECK_* variable when that is set and not empty (getenv, usually
// os.Getenv). A malformed variable does not fail here: Check reports it, unless the front end said
// with Set that a flag gave the setting.
//
// The rule for every numeric default is the rule of the flag it stands for: REPLAYCHECK_REPLAYS
// takes what --replays takes, 0 (each probe's own) to probes.DefaultLimits().MaxReplays.
func Defaults(getenv func(string) string) Config {
	c := Config{
		Backend: "sim", Profile: backends.DefaultProfile, Guards: "both", Baseline: "auto",
		Timelines: "failed", Timeout: time.Minute,
	}
	str := func(key, setting string, dst *string) {
		if v := getenv(key); v != "" {
			*dst = v
			c.fromVar(setting, key)
		}
	}
	str(EnvBackend, "backend", &c.Backend)
	str(EnvProfile, "profile", &c.Profile)
	str(EnvModes, "modes", &c.Modes)
	str(EnvGuards, "guards", &c.Guards)
	str(EnvBaseline, "baseline", &c.Baseline)
	str(EnvRuntime, "runtime", &c.Runtime)
	switch v := getenv(EnvIsolate); v {
	case "":
	case "1", "true", "yes":
		c.Isolate = true
	case "0", "false", "no":
	default:
		c.envErr("isolate", fmt.Errorf("%s=%q: want 1, true or yes, or 0, false or no", EnvIsolate, v))
	}
	if v := getenv(EnvReplays); v != "" {
		n, err := probes.ParseUint(v)
		if max := probes.DefaultLimits().MaxReplays; err != nil || n > uint64(max) {
			c.envErr("replays", fmt.Errorf("%s=%q: want a number of replay rounds, 0 (each probe's own) to %d", EnvReplays, v, max))
		} else {
			c.Replays = int(n)
		}
	}
	if v := getenv(EnvSeed); v != "" {
		n, err := probes.ParseUint(v)
		if err != nil {
			c.envErr("seed", fmt.Errorf("%s=%q: want a non-negative integer, decimal or 0x hex", EnvSeed, v))
		}
		c.Seed = n
	}
	if v := getenv(EnvShard); v != "" {
		if err := c.Shard.Set(v); err != nil {
			c.envErr("shard", fmt.Errorf("%s=%q: %w", EnvShard, v, err))
		}
	}
	c.faultsFromEnv(getenv)
	return c
}

// ReplaysFlag and SeedFlag are the flag.Values of --replays and --seed (the CLI's and the
// suite's): a number as the probe language writes one (probes.ParseUint: decimal or 0x hex, no
// leading 0), as their variables take it. The flag package's own would read 010 as 8.
func ReplaysFlag(c *Config) flag.Value { return numberFlag[int]{&c.Replays} }

// SeedFlag: see ReplaysFlag.
func SeedFlag(c *Config) flag.Value { return numberFlag[uint64]{&c.Seed} }

type numberFlag[T int | uint64] struct{ n *T }

func (f numberFlag[T]) String() string {
	if f.n == nil {
		return "0"
	}
	return strconv.FormatUint(uint64(*f.n), 10)
}

func (f numberFlag[T]) Set(v string) error {
	n, err := probes.ParseUint(v)
	if err != nil {
		return err
	}
	if T(n) < 0 || uint64(T(n)) != n { // past an int
		return fmt.Errorf("%s is too large", v)
	}
	*f.n = T(n)
	return nil
}

// fromVar records that variable gave setting's value (see fromEnv).
func (c *Config) fromVar(setting, variable string) {
	if c.fromEnv == nil {
		c.fromEnv = map[string]string{}
	}
	c.fromEnv[setting] = variable
}

func (c *Config) envErr(setting string, err error) {
	if c.envErrs == nil {
		c.envErrs = map[string]error{}
	}
	c.envErrs[setting] = err
}

// Set records that the setting (replays, seed, shard: a CLI flag's name) was given explicitly, so
// a malformed environment default of it is no longer an error, and a value rejected is the flag's.
func (c *Config) Set(setting string) {
	delete(c.envErrs, setting)
	delete(c.fromEnv, setting)
}

// SettingError is a setting with a value Check rejects. It reads as the CLI flag, "--modes: ...",
// or as the variable the value came from, "REPLAYCHECK_MODES: ...".
type SettingError struct {
	Setting string // the CLI flag's name, without dashes
	Env     string // the environment variable that gave the value; "" when a flag or the code did
	Err     error
}

func (e *SettingError) Error() string {
	if e.Env != "" {
		return e.Env + ": " + e.Err.Error()
	}
	return "--" + e.Setting + ": " + e.Err.Error()
}

func (e *SettingError) Unwrap() error { return e.Err }

// Invalid is the SettingError of setting's value, blamed on its variable when it came from one:
// Check's, and a front end's own check of a setting (the CLI's load of --runtime).
func (c *Config) Invalid(setting string, err error) error {
	return &SettingError{Setting: setting, Env: c.fromEnv[setting], Err: err}
}

func (c *Config) settingErrf(setting string, format string, args ...any) error {
	return c.Invalid(setting, fmt.Errorf(format, args...))
}

// Check reports a malformed environment default (the first by setting name) and every setting
// that cannot be used: replays outside 0..MaxReplays, a timeout that is not positive, unknown
// modes or guard settings, a --run pattern that does not compile, a shard that is not K/N with
// 1 <= K <= N, timelines other than failed or all, a memory size for a backend other than the
// simulator, a --fault that is not KIND@N, names a replay round --replays never reaches or fires at
// the same call as another. It opens nothing (see CheckBackend).
func (c *Config) Check() error {
	if len(c.envErrs) > 0 {
		keys := make([]string, 0, len(c.envErrs))
		for k := range c.envErrs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return c.envErrs[keys[0]]
	}
	if max := probes.DefaultLimits().MaxReplays; c.Replays < 0 || c.Replays > max {
		return c.settingErrf("replays", "%d is outside 0..%d", c.Replays, max)
	}
	if _, err := c.Matrix(); err != nil {
		return err
	}
	if _, err := c.pattern(); err != nil {
		return err
	}
	if c.Shard != (Shard{}) && (c.Shard.N < 1 || c.Shard.K < 1 || c.Shard.K > c.Shard.N) {
		return c.settingErrf("shard", "%s: want K/N with 1 <= K <= N", c.Shard)
	}
	if c.Timelines != "" && c.Timelines != "failed" && c.Timelines != "all" {
		return c.settingErrf("timelines", "%q is not failed or all", c.Timelines)
	}
	if c.Timeout <= 0 {
		return c.settingErrf("timeout", "%v is not a positive duration", c.Timeout)
	}
	if c.Memory != 0 && c.Backend != "sim" {
		// Only the simulator's memory has a size to choose: a device backend's is the card's.
		return fmt.Errorf("--memory sizes the simulator's device memory; backend %s's device has its own (leave --memory out)", c.Backend)
	}
	return c.checkFaults()
}

// Profiles are the profiles c.Profile lists (comma-separated; blanks and repeats dropped), one run
// each: a profile named twice would put every instance id in the report twice.
func (c *Config) Profiles() []string {
	var out []string
	for _, p := range strings.Split(c.Profile, ",") {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// plan is the profiles of c's invocation, one run each: Plan when set, else Profiles ("" alone
// when c names none: the backend's default).
func (c Config) plan() []string {
	if len(c.Plan) > 0 {
		return c.Plan
	}
	if ps := c.Profiles(); len(ps) > 0 {
		return ps
	}
	return []string{c.Profile}
}

// CheckBackend opens the configured backend and closes it again: the check a front end makes
// before anything runs, so a typo in a profile costs no device time.
func (c *Config) CheckBackend() error {
	b, err := backends.Open(c.Backend, c.backendConfig())
	if err != nil {
		return err
	}
	return b.Close()
}

func (c *Config) backendConfig() backends.Config {
	return backends.Config{Profile: c.Profile, Seed: c.Seed, Memory: c.Memory, Library: c.Library}
}

// Matrix is the instance matrix the configuration selects: modes, guard settings, replays.
func (c *Config) Matrix() (probes.Matrix, error) {
	m := probes.Matrix{Replays: c.Replays}
	var err error
	if m.Modes, err = probes.ParseModes(c.Modes); err != nil {
		return m, c.Invalid("modes", err)
	}
	if m.Guards, err = probes.ParseGuards(c.Guards); err != nil {
		return m, c.Invalid("guards", err)
	}
	return m, nil
}

func (c *Config) pattern() (*regexp.Regexp, error) {
	if c.Run == "" {
		return nil, nil
	}
	re, err := regexp.Compile(c.Run)
	if err != nil {
		return nil, c.Invalid("run", err)
	}
	return re, nil
}

// LocateBaseline is the baseline of platform (an opened device's Platform()) that c.Baseline
// names (verdict.LocateBaseline): auto looks for baselines/<platform key>.yaml beside each of
// c.Paths (in a directory given, in a file's directory), "specs" when there are none, and is nil
// without error when none has it. The file is named relative to the working directory when it
// lies below it.
func (c *Config) LocateBaseline(platform string) (*verdict.Baseline, error) {
	paths := c.Paths
	if len(paths) == 0 {
		paths = DefaultPaths
	}
	var dirs []string
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || !st.IsDir() {
			p = filepath.Dir(p)
		}
		dirs = append(dirs, p)
	}
	b, err := verdict.LocateBaseline(c.Baseline, dirs, platform)
	if b != nil {
		b.File = display(b.File)
	}
	return b, err
}

// DefaultPaths is where the probe catalog lives in the repository, the paths of a Config without
// any.
var DefaultPaths = []string{"specs"}

// display names a file relative to the working directory when it lies below it, as given otherwise.
func display(file string) string {
	base, err := os.Getwd()
	if err != nil {
		return file
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return file
	}
	if rel, err := filepath.Rel(base, abs); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return file
}

// LoadRuntime loads the runtime plugin at path as the engine's runtime under test; release
// unloads it. An empty path is the built-in guards: nil, and a release that does nothing.
func LoadRuntime(path string) (rut *runtime.UnderTest, release func() error, err error) {
	if path == "" {
		return nil, func() error { return nil }, nil
	}
	p, err := plugin.Load(path)
	if err != nil {
		return nil, nil, err
	}
	return &runtime.UnderTest{Name: p.Name(), Open: func(dev device.Device, guarded bool) (runtime.Runtime, error) {
		rt, err := p.Open(dev, guarded)
		if err != nil {
			return nil, err
		}
		return rt, nil
	}}, p.Close, nil
}

// Shard is one of N parts of a selection: an instance belongs to shard K (1-based) when the
// FNV-1a 64-bit hash of its id is K-1 modulo N. The parts of N shards are disjoint and together
// are the whole selection; an instance's shard depends on its id alone, never on what else was
// selected, so N hosts (or a Kubernetes Indexed Job, K = JOB_COMPLETION_INDEX+1) agree without
// talking. The zero Shard is the whole selection.
type Shard struct{ K, N int }

// ParseShard reads "K/N".
func ParseShard(s string) (Shard, error) {
	var sh Shard
	err := sh.Set(s)
	return sh, err
}

// Set reads "K/N" (flag.Value); "" is the whole selection.
func (s *Shard) Set(v string) error {
	if v == "" {
		*s = Shard{}
		return nil
	}
	ks, ns, ok := strings.Cut(v, "/")
	// Numbers as the probe language writes them (no leading 0, no sign): 01/02 is a typo.
	k, kerr := probes.ParseUint(strings.TrimSpace(ks))
	n, nerr := probes.ParseUint(strings.TrimSpace(ns))
	if !ok || kerr != nil || nerr != nil || n < 1 || k < 1 || k > n || n > math.MaxInt32 {
		return fmt.Errorf("%q is not K/N with 1 <= K <= N", v)
	}
	*s = Shard{K: int(k), N: int(n)}
	return nil
}

// String is "K/N", "" for the whole selection.
func (s Shard) String() string {
	if s == (Shard{}) {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.K, s.N)
}

// Holds reports whether the instance with this id belongs to the shard.
func (s Shard) Holds(id string) bool {
	if s.N <= 1 {
		return true
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()%uint64(s.N) == uint64(s.K-1)
}

// MarshalText writes "K/N" (the journal's form).
func (s Shard) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads "K/N".
func (s *Shard) UnmarshalText(b []byte) error { return s.Set(string(b)) }

// ErrNothingSelected is wrapped by Select's error when the selection leaves no instance.
var ErrNothingSelected = errors.New("no instance to run")

// Select expands ps into the instances c selects, in the stable order of probes.Instances (probe
// order, then mode, then guards on before off): the matrix (modes, guards, replays), then the probe
// ids (each must name a probe of ps), then the --run pattern, then the shard. A selection that
// leaves nothing is an error wrapping ErrNothingSelected that says what narrowed it: a typo must
// not pass as an empty, successful run.
func Select(ps []*probes.Probe, c Config) ([]probes.Instance, error) {
	m, err := c.Matrix()
	if err != nil {
		return nil, err
	}
	re, err := c.pattern()
	if err != nil {
		return nil, err
	}
	if len(c.Probes) > 0 {
		known := make([]string, len(ps))
		for i, p := range ps {
			known[i] = p.ID()
		}
		var picked []*probes.Probe
		for _, id := range c.Probes {
			i := slices.Index(known, id)
			if i < 0 {
				return nil, fmt.Errorf("--probe %s: no probe with that id in the probe files%s", id, probes.DidYouMean(id, known))
			}
			if !slices.Contains(picked, ps[i]) { // an id given twice is one probe, run once
				picked = append(picked, ps[i])
			}
		}
		ps = picked
	}
	all := probes.Instances(ps, m)
	var matched, out []probes.Instance
	for _, in := range all {
		if re == nil || re.MatchString(in.ID()) {
			matched = append(matched, in)
		}
	}
	for _, in := range matched {
		if c.Shard.Holds(in.ID()) {
			out = append(out, in)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNothingSelected, c.describe(len(all), len(matched)))
	}
	return out, nil
}

// Covers reports whether the selection c makes would take the instance id
// (set/name@mode/guards-on|off) if its probe were among those given: its probe among c.Probes
// (when there are any), its mode and guard setting in c's matrix, its id matched by the --run
// pattern and held by the shard. It is Select's filter for an instance that need not exist, e.g.
// one a baseline records: a narrowed run says nothing of the instances it does not cover.
func (c *Config) Covers(id string) (bool, error) {
	probe, mode, guarded, err := probes.ParseID(id)
	if err != nil {
		return false, err
	}
	m, err := c.Matrix()
	if err != nil {
		return false, err
	}
	re, err := c.pattern()
	if err != nil {
		return false, err
	}
	switch {
	case len(c.Probes) > 0 && !slices.Contains(c.Probes, probe),
		m.Modes != nil && !slices.Contains(m.Modes, mode),
		m.Guards != nil && !slices.Contains(m.Guards, guarded),
		re != nil && !re.MatchString(id):
		return false, nil
	}
	return c.Shard.Holds(id), nil
}

// describe says what narrowed the selection to nothing.
func (c Config) describe(all, matched int) string {
	switch {
	case matched > 0:
		return fmt.Sprintf("--shard %s holds none of the %s the other flags select", c.Shard, plural.Count(matched, "instance"))
	case c.Run != "" && all > 0:
		return fmt.Sprintf("--run %q matches none of the %s the other flags select", c.Run, plural.Count(all, "instance"))
	case c.Run != "":
		return fmt.Sprintf("--run %q: the other flags already select no instance", c.Run)
	case c.Modes != "" || (c.Guards != "both" && c.Guards != ""):
		var asked []string
		if c.Modes != "" {
			asked = append(asked, fmt.Sprintf("--modes %s", c.Modes))
		}
		if c.Guards != "both" && c.Guards != "" {
			asked = append(asked, "--guards "+c.Guards)
		}
		return fmt.Sprintf("no probe runs with %s (a probe's own modes and guards limit what can be selected)", strings.Join(asked, " and "))
	}
	return "the probe files hold no probe"
}

// reportOptions are the report's options this configuration asks for.
func (c Config) reportOptions() reports.Options {
	return reports.Options{AllTimelines: c.Timelines == "all"}
}

// Load reads the probe files and directories paths (DefaultPaths when none) with the default
// limits and returns their probes in order. Its error is probes.Load's: probes.Diagnostics when
// the files have problems.
func Load(paths ...string) ([]*probes.Probe, error) {
	if len(paths) == 0 {
		paths = DefaultPaths
	}
	sets, err := probes.Load(probes.DefaultLimits(), paths...)
	if err != nil {
		return nil, err
	}
	var out []*probes.Probe
	for _, s := range sets {
		out = append(out, s.Probes...)
	}
	return out, nil
}
