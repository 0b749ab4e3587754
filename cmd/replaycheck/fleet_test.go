package main_test

// docs/fleet.md's manifests, run: the Kubernetes Indexed Jobs (docs/fleet/ascend-job.yaml,
// gpu-job.yaml, then merge-job.yaml) and the GitHub Actions matrix (docs/fleet/ci-matrix.yaml) are
// parsed with yaml.v3, and the commands in them run as written, for every shard, on the simulator:
//
//   - a container's REPLAYCHECK_BACKEND (acl or cuda) becomes sim, with REPLAYCHECK_PROFILE the
//     simulator profile of the same platform family (acl: cann, cuda: cuda); everything else of
//     its environment is kept, JOB_COMPLETION_INDEX is the pod's index, and SPECS and REPORTS
//     point at temporary directories;
//   - a workflow's steps run in a temporary workspace per job and matrix entry: checkout is the
//     probe files, upload-artifact and download-artifact copy directories by artifact name as the
//     actions do (one directory per artifact under the download path), setup-go and the build
//     step are skipped (replaycheck on PATH is this test binary, which testscript.Main put
//     there), every other run step runs under bash -e, as a runner runs it.
//
// The probe files are specs/basic.yaml and specs/hazards.yaml with specs/baselines, which keeps the
// isolated runs short. The merged report must equal the unsharded run of both platforms: the
// same instances with the same outcomes and verdicts, the same enforcement table (JSON), and the
// same --table text.

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"gopkg.in/yaml.v3"

	"github.com/replaycheck/replaycheck/device/acl"
	"github.com/replaycheck/replaycheck/device/cuda"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/run"
)

// fleetDir is where the manifests are.
var fleetDir = filepath.Join("..", "..", "docs", "fleet")

// simProfile is the simulator profile that stands in for a device backend.
var simProfile = map[string]string{"acl": "cann", "cuda": "cuda"}

// k8sJob is what the test reads of a Kubernetes Job.
type k8sJob struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		CompletionMode string `yaml:"completionMode"`
		Completions    *int   `yaml:"completions"`
		Parallelism    *int   `yaml:"parallelism"`
		Template       struct {
			Spec struct {
				RestartPolicy string         `yaml:"restartPolicy"`
				Containers    []k8sContainer `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type k8sContainer struct {
	Name    string   `yaml:"name"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	Resources struct {
		Limits map[string]string `yaml:"limits"`
	} `yaml:"resources"`
}

func readYAML(file string, v any) {
	GinkgoHelper()
	data, err := os.ReadFile(file)
	Expect(err).NotTo(HaveOccurred())
	Expect(yaml.Unmarshal(data, v)).To(Succeed(), "%s", file)
}

// script is the container's shell script: command sh -c, and the script its one argument.
func (c k8sContainer) script() (string, error) {
	if !slices.Equal(c.Command, []string{"sh", "-c"}) || len(c.Args) != 1 {
		return "", fmt.Errorf("container %s: want command [sh, -c] and the script as its one argument, got %q %q", c.Name, c.Command, c.Args)
	}
	if !strings.Contains(c.Args[0], "replaycheck ") {
		return "", fmt.Errorf("container %s: the script runs no replaycheck", c.Name)
	}
	return c.Args[0], nil
}

// env is the container's environment as a map.
func (c k8sContainer) env() map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}

// checkShardJob checks what makes j an Indexed Job of one shard per index on a device of the
// device plugin resource, and returns its container and the number of shards.
func checkShardJob(j k8sJob, resource string) (k8sContainer, int, error) {
	var c k8sContainer
	switch {
	case j.APIVersion != "batch/v1" || j.Kind != "Job":
		return c, 0, fmt.Errorf("%s: want a batch/v1 Job, got %s %s", j.Metadata.Name, j.APIVersion, j.Kind)
	case j.Spec.CompletionMode != "Indexed":
		return c, 0, fmt.Errorf("%s: completionMode %q, want Indexed (JOB_COMPLETION_INDEX is the shard)", j.Metadata.Name, j.Spec.CompletionMode)
	case j.Spec.Template.Spec.RestartPolicy != "Never":
		return c, 0, fmt.Errorf("%s: restartPolicy %q, want Never (podFailurePolicy needs it)", j.Metadata.Name, j.Spec.Template.Spec.RestartPolicy)
	case len(j.Spec.Template.Spec.Containers) != 1:
		return c, 0, fmt.Errorf("%s: want one container", j.Metadata.Name)
	}
	c = j.Spec.Template.Spec.Containers[0]
	if c.Resources.Limits[resource] != "1" {
		return c, 0, fmt.Errorf("%s: limits %v: want %s: 1, one device per shard", j.Metadata.Name, c.Resources.Limits, resource)
	}
	env := c.env()
	shards, err := strconv.Atoi(env["SHARDS"])
	if err != nil || j.Spec.Completions == nil || *j.Spec.Completions != shards {
		return c, 0, fmt.Errorf("%s: completions %v and SHARDS %q must be the same number: a shard no pod runs is missing from the merge", j.Metadata.Name, j.Spec.Completions, env["SHARDS"])
	}
	if _, ok := simProfile[env[run.EnvBackend]]; !ok {
		return c, 0, fmt.Errorf("%s: %s=%q: want acl or cuda", j.Metadata.Name, run.EnvBackend, env[run.EnvBackend])
	}
	for _, k := range []string{"SPECS", "REPORTS"} {
		if env[k] == "" {
			return c, 0, fmt.Errorf("%s: the container sets no %s, which the test points at its own directory", j.Metadata.Name, k)
		}
	}
	_, err = c.script()
	return c, shards, err
}

// fleetEnv is the environment of a command the test runs: the test's own without REPLAYCHECK_*
// (a caller's must not leak in), then vars, with a device backend replaced by the simulator.
func fleetEnv(vars map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REPLAYCHECK_") {
			out = append(out, kv)
		}
	}
	if !strings.Contains(os.Getenv("GORACE"), "atexit_sleep_ms") {
		// Under -race every replaycheck would sleep a second before exiting (script_test.go's setup).
		out = append(out, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=10"))
	}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		v := vars[k]
		if profile, ok := simProfile[v]; ok && k == run.EnvBackend {
			out = append(out, run.EnvProfile+"="+profile)
			v = "sim"
		}
		out = append(out, k+"="+v)
	}
	return out
}

// shell runs script with shell (its arguments before the script) in dir and returns its stdout;
// a non-zero exit fails the spec with stderr.
func shell(dir string, env []string, script string, shellArgs ...string) []byte {
	GinkgoHelper()
	cmd := exec.Command(shellArgs[0], append(shellArgs[1:], script)...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	Expect(cmd.Run()).To(Succeed(), "%s in %s:\n%s\nstderr:\n%s", shellArgs, dir, script, stderr.String())
	return stdout.Bytes()
}

// runKey names one instance of one platform.
type runKey struct{ Platform, ID string }

// digest is what must agree between the merged shards and the unsharded run.
type digest struct {
	findings    map[runKey]finding
	enforcement *reports.Table
}

func digestOf(file string) digest {
	GinkgoHelper()
	doc := readDocument(file)
	d := digest{findings: map[runKey]finding{}, enforcement: doc.Enforcement}
	for i, f := range findings(doc.Results) {
		k := runKey{doc.Results[i].Platform, f.ID}
		Expect(d.findings).NotTo(HaveKey(k), "%s holds %v twice", file, k)
		d.findings[k] = f
	}
	return d
}

// differences says how got differs from want, one line each; none when they agree.
func (got digest) differences(want digest) []string {
	var out []string
	for _, k := range slices.SortedFunc(maps.Keys(want.findings), func(a, b runKey) int { return strings.Compare(a.Platform+a.ID, b.Platform+b.ID) }) {
		g, ok := got.findings[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s %s: missing", k.Platform, k.ID))
		case g != want.findings[k]:
			out = append(out, fmt.Sprintf("%s %s: %+v, unsharded %+v", k.Platform, k.ID, g, want.findings[k]))
		}
	}
	for k := range got.findings {
		if _, ok := want.findings[k]; !ok {
			out = append(out, fmt.Sprintf("%s %s: not in the unsharded run", k.Platform, k.ID))
		}
	}
	if !reflect.DeepEqual(got.enforcement, want.enforcement) {
		out = append(out, "the enforcement tables differ")
	}
	return out
}

// copyTree copies the files under src into dst.
func copyTree(src, dst string) {
	GinkgoHelper()
	Expect(filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})).To(Succeed())
}

var _ = Describe("docs/fleet", Ordered, cgoNeutral, func() {
	var (
		specs string // the probe files the manifests run
		want  digest // the unsharded run of both platforms
		table []byte // its --table text
	)

	BeforeAll(func() {
		_, err := exec.LookPath("replaycheck")
		Expect(err).NotTo(HaveOccurred(), "replaycheck is on PATH in this test binary (testscript.Main)")
		specs = filepath.Join(GinkgoT().TempDir(), "specs")
		Expect(os.MkdirAll(filepath.Join(specs, "baselines"), 0o755)).To(Succeed())
		for _, f := range []string{"basic.yaml", "hazards.yaml"} {
			data, err := os.ReadFile(filepath.Join("..", "..", "specs", f))
			Expect(err).NotTo(HaveOccurred())
			Expect(os.WriteFile(filepath.Join(specs, f), data, 0o644)).To(Succeed())
		}
		copyTree(filepath.Join("..", "..", "specs", "baselines"), filepath.Join(specs, "baselines"))

		// The unsharded run, ascend's platform first as the merges list it.
		dir := GinkgoT().TempDir()
		env := fleetEnv(map[string]string{"SPECS": specs})
		shell(dir, env, `replaycheck run --profile cann,cuda --format json "$SPECS" > unsharded.json`, "sh", "-c")
		want = digestOf(filepath.Join(dir, "unsharded.json"))
		Expect(want.findings).NotTo(BeEmpty())
		table = shell(dir, env, `replaycheck run --profile cann,cuda --table "$SPECS"`, "sh", "-c")
	})

	It("has the docs' device plugin resources and backends, and checks them", func() {
		var ascend, gpu k8sJob
		readYAML(filepath.Join(fleetDir, "ascend-job.yaml"), &ascend)
		readYAML(filepath.Join(fleetDir, "gpu-job.yaml"), &gpu)
		c, _, err := checkShardJob(ascend, "huawei.com/Ascend910")
		Expect(err).NotTo(HaveOccurred())
		Expect(c.env()[run.EnvBackend]).To(Equal("acl"))
		c, _, err = checkShardJob(gpu, "nvidia.com/gpu")
		Expect(err).NotTo(HaveOccurred())
		Expect(c.env()[run.EnvBackend]).To(Equal("cuda"))

		// The controls: each broken in one way.
		_, _, err = checkShardJob(ascend, "nvidia.com/gpu")
		Expect(err).To(MatchError(ContainSubstring("want nvidia.com/gpu: 1")))
		three := ascend
		n := 3
		three.Spec.Completions = &n
		_, _, err = checkShardJob(three, "huawei.com/Ascend910")
		Expect(err).To(MatchError(ContainSubstring("must be the same number")))
		nonIndexed := gpu
		nonIndexed.Spec.CompletionMode = "NonIndexed"
		_, _, err = checkShardJob(nonIndexed, "nvidia.com/gpu")
		Expect(err).To(MatchError(ContainSubstring("want Indexed")))
	})

	It("names the variables the device backends read", func() {
		// docs/fleet.md tells a host how to point at its library with them.
		doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "fleet.md"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(doc)).To(ContainSubstring(acl.EnvLibrary))
		Expect(string(doc)).To(ContainSubstring(cuda.EnvLibrary))
	})

	It("runs the Indexed Jobs' shards and merges them into the unsharded run", func() {
		reportsDir := GinkgoT().TempDir()
		for _, f := range []struct{ file, resource string }{
			{"ascend-job.yaml", "huawei.com/Ascend910"},
			{"gpu-job.yaml", "nvidia.com/gpu"},
		} {
			var j k8sJob
			readYAML(filepath.Join(fleetDir, f.file), &j)
			c, shards, err := checkShardJob(j, f.resource)
			Expect(err).NotTo(HaveOccurred())
			script, _ := c.script()
			before, _ := filepath.Glob(filepath.Join(reportsDir, "*"))
			for index := range shards {
				vars := c.env()
				vars["SPECS"], vars["REPORTS"], vars["JOB_COMPLETION_INDEX"] = specs, reportsDir, strconv.Itoa(index)
				shell(GinkgoT().TempDir(), fleetEnv(vars), script, "sh", "-c")
			}
			after, _ := filepath.Glob(filepath.Join(reportsDir, "*"))
			Expect(after).To(HaveLen(len(before)+shards), "%s: one report directory per shard", f.file)
		}

		var merge k8sJob
		readYAML(filepath.Join(fleetDir, "merge-job.yaml"), &merge)
		Expect(merge.Spec.Template.Spec.Containers).To(HaveLen(1))
		c := merge.Spec.Template.Spec.Containers[0]
		Expect(c.Resources.Limits).To(BeEmpty(), "the merge needs no device")
		script, err := c.script()
		Expect(err).NotTo(HaveOccurred())
		vars := c.env()
		Expect(vars).To(HaveKey("REPORTS"))
		vars["REPORTS"] = reportsDir
		out := shell(GinkgoT().TempDir(), fleetEnv(vars), script, "sh", "-c")
		Expect(string(out)).To(Equal(string(table)), "the merged --table and the unsharded one")
		got := digestOf(filepath.Join(reportsDir, "merged.json"))
		Expect(got.differences(want)).To(BeEmpty())
		for _, f := range []string{"merged.html", "merged.md"} {
			Expect(filepath.Join(reportsDir, f)).To(BeARegularFile())
		}

		// The control: a merge that lacks one shard is not the unsharded run.
		dirs, _ := filepath.Glob(filepath.Join(reportsDir, "*-[0-9]*"))
		Expect(dirs).To(ContainElement(filepath.Join(reportsDir, "ascend-1")))
		partial := filepath.Join(GinkgoT().TempDir(), "partial.json")
		merged := exec.Command("replaycheck", append([]string{"report", "merge"}, slices.DeleteFunc(dirs, func(d string) bool {
			return filepath.Base(d) == "ascend-1"
		})...)...)
		merged.Env = fleetEnv(nil)
		data, err := merged.Output()
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(partial, data, 0o644)).To(Succeed())
		Expect(digestOf(partial).differences(want)).To(ContainElement(MatchRegexp(`^sim/cann \S+: missing$`)))
	})

	It("runs the GitHub Actions matrix's shards and merges them into the unsharded run", func() {
		var wf workflow
		readYAML(filepath.Join(fleetDir, "ci-matrix.yaml"), &wf)
		Expect(wf.Jobs).To(HaveKey("shard"))
		Expect(wf.Jobs).To(HaveKey("merge"))
		shardJob := wf.Jobs["shard"]
		Expect(wf.Jobs["merge"].Needs).To(Equal("shard"))
		Expect(shardJob.Strategy.FailFast).NotTo(BeNil(), "fail-fast: false, every shard's report is wanted")
		Expect(*shardJob.Strategy.FailFast).To(BeFalse(), "every shard's report is wanted")
		combos, err := combinations(shardJob.Strategy.Matrix)
		Expect(err).NotTo(HaveOccurred())

		// Every platform runs shards 1..SHARDS, and the run step names them as K/SHARDS.
		shards, err := strconv.Atoi(wf.Env["SHARDS"])
		Expect(err).NotTo(HaveOccurred())
		byPlatform := map[string][]string{}
		for _, c := range combos {
			Expect(simProfile).To(HaveKey(c["backend"]), "matrix entry %v: want backend acl or cuda", c)
			byPlatform[c["platform"]] = append(byPlatform[c["platform"]], c["shard"])
		}
		Expect(byPlatform).To(HaveLen(2))
		for p, got := range byPlatform {
			var want []string
			for k := 1; k <= shards; k++ {
				want = append(want, strconv.Itoa(k))
			}
			Expect(got).To(ConsistOf(want), "platform %s", p)
		}

		e := &emulation{wf: wf, specs: specs, artifacts: GinkgoT().TempDir()}
		for _, c := range combos {
			e.job("shard", c)
		}
		ws, outs := e.job("merge", nil)
		Expect(outs).To(HaveKey("Merge"))
		Expect(string(outs["Merge"])).To(Equal(string(table)), "the merged --table and the unsharded one")
		Expect(digestOf(filepath.Join(ws, "merged.json")).differences(want)).To(BeEmpty())
		Expect(filepath.Join(ws, "merged.html")).To(BeARegularFile())
	})

	It("expands a matrix as GitHub does, and refuses what it does not emulate", func() {
		combos, err := combinations(map[string]any{
			"platform": []any{"ascend", "gpu"}, "shard": []any{1, 2},
			"include": []any{map[string]any{"platform": "gpu", "backend": "cuda"}},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(combos).To(ConsistOf(
			map[string]string{"platform": "ascend", "shard": "1"},
			map[string]string{"platform": "ascend", "shard": "2"},
			map[string]string{"platform": "gpu", "shard": "1", "backend": "cuda"},
			map[string]string{"platform": "gpu", "shard": "2", "backend": "cuda"},
		))
		_, err = combinations(map[string]any{"shard": []any{1}, "include": []any{map[string]any{"shard": 9, "x": "y"}}})
		Expect(err).To(MatchError(ContainSubstring("matches no combination")))
		_, err = expand("run ${{ github.sha }}", nil, nil)
		Expect(err).To(MatchError(ContainSubstring("not emulated")))
		s, err := expand("--shard ${{ matrix.shard }}/${{ env.SHARDS }}", map[string]string{"shard": "2"}, map[string]string{"SHARDS": "4"})
		Expect(err).NotTo(HaveOccurred())
		Expect(s).To(Equal("--shard 2/4"))
	})
})

// The GitHub Actions workflow, emulated.

type workflow struct {
	Env  map[string]string `yaml:"env"`
	Jobs map[string]ghJob  `yaml:"jobs"`
}

type ghJob struct {
	Needs    string `yaml:"needs"`
	RunsOn   any    `yaml:"runs-on"`
	Strategy struct {
		FailFast *bool          `yaml:"fail-fast"`
		Matrix   map[string]any `yaml:"matrix"`
	} `yaml:"strategy"`
	Env   map[string]string `yaml:"env"`
	Steps []ghStep          `yaml:"steps"`
}

type ghStep struct {
	Name string            `yaml:"name"`
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	With map[string]string `yaml:"with"`
}

// combinations expands a strategy matrix as GitHub does: every combination of the lists, then each
// include entry's new keys added to the combinations whose keys it matches.
func combinations(m map[string]any) ([]map[string]string, error) {
	out := []map[string]string{{}}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == "include" || k == "exclude" {
			continue
		}
		vals, ok := m[k].([]any)
		if !ok {
			return nil, fmt.Errorf("matrix %s: want a list", k)
		}
		var next []map[string]string
		for _, c := range out {
			for _, v := range vals {
				n := maps.Clone(c)
				n[k] = fmt.Sprint(v)
				next = append(next, n)
			}
		}
		out = next
	}
	if _, ok := m["exclude"]; ok {
		return nil, fmt.Errorf("matrix exclude: not emulated")
	}
	includes, _ := m["include"].([]any)
	for _, inc := range includes {
		entry, ok := inc.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("matrix include: want mappings")
		}
		matched := false
		for _, c := range out {
			match := true
			for k, v := range entry {
				if _, orig := m[k]; orig && c[k] != fmt.Sprint(v) {
					match = false
				}
			}
			if match {
				matched = true
				for k, v := range entry {
					if _, orig := m[k]; !orig {
						c[k] = fmt.Sprint(v)
					}
				}
			}
		}
		if !matched {
			return nil, fmt.Errorf("matrix include %v matches no combination", entry)
		}
	}
	return out, nil
}

var expression = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// expand replaces ${{ matrix.K }} and ${{ env.K }}; any other expression is an error, so that the
// test never runs a command other than the one a runner would.
func expand(s string, matrix, env map[string]string) (string, error) {
	var err error
	out := expression.ReplaceAllStringFunc(s, func(e string) string {
		name := expression.FindStringSubmatch(e)[1]
		if k, ok := strings.CutPrefix(name, "matrix."); ok {
			if v, ok := matrix[k]; ok {
				return v
			}
		}
		if k, ok := strings.CutPrefix(name, "env."); ok {
			if v, ok := env[k]; ok {
				return v
			}
		}
		err = fmt.Errorf("expression %s: not emulated", e)
		return e
	})
	return out, err
}

// emulation runs a workflow's jobs: artifacts are directories by name under its own directory.
type emulation struct {
	wf        workflow
	specs     string
	artifacts string
}

// job runs one job for one matrix combination in a fresh workspace and returns the workspace
// and the stdout of each run step by name.
func (e *emulation) job(name string, matrix map[string]string) (string, map[string][]byte) {
	GinkgoHelper()
	j := e.wf.Jobs[name]
	ws := GinkgoT().TempDir()
	env := map[string]string{}
	for k, v := range e.wf.Env {
		env[k] = v
	}
	for k, v := range j.Env {
		x, err := expand(v, matrix, env)
		Expect(err).NotTo(HaveOccurred())
		env[k] = x
	}
	env["GITHUB_STEP_SUMMARY"] = filepath.Join(GinkgoT().TempDir(), "summary.md")
	env["RUNNER_TEMP"] = GinkgoT().TempDir()
	outs := map[string][]byte{}
	for _, st := range j.Steps {
		with := map[string]string{}
		for k, v := range st.With {
			x, err := expand(v, matrix, env)
			Expect(err).NotTo(HaveOccurred())
			with[k] = x
		}
		action, _, _ := strings.Cut(st.Uses, "@")
		switch {
		case action == "actions/checkout":
			Expect(os.Symlink(e.specs, filepath.Join(ws, "specs"))).To(Succeed())
		case action == "actions/setup-go":
		case action == "actions/upload-artifact":
			dst := filepath.Join(e.artifacts, with["name"])
			Expect(dst).NotTo(BeADirectory(), "artifact %s uploaded twice", with["name"])
			for _, p := range strings.Fields(with["path"]) {
				src := filepath.Join(ws, p)
				st, err := os.Stat(src)
				Expect(err).NotTo(HaveOccurred(), "upload of %s", p)
				if st.IsDir() {
					copyTree(src, dst) // a directory's files, at the artifact's root
					continue
				}
				// Files of the workspace's top directory, as these uploads name them: at the root.
				Expect(filepath.Dir(p)).To(Equal("."), "upload of %s: only top-level files are emulated", p)
				data, err := os.ReadFile(src)
				Expect(err).NotTo(HaveOccurred())
				Expect(os.MkdirAll(dst, 0o755)).To(Succeed())
				Expect(os.WriteFile(filepath.Join(dst, p), data, 0o644)).To(Succeed())
			}
		case action == "actions/download-artifact":
			all, err := os.ReadDir(e.artifacts)
			Expect(err).NotTo(HaveOccurred())
			n := 0
			for _, a := range all {
				if ok, _ := path.Match(with["pattern"], a.Name()); ok {
					copyTree(filepath.Join(e.artifacts, a.Name()), filepath.Join(ws, with["path"], a.Name()))
					n++
				}
			}
			Expect(n).To(BeNumerically(">", 0), "no artifact matches %s", with["pattern"])
		case st.Uses != "":
			Fail("the test does not emulate " + st.Uses)
		case strings.HasPrefix(st.Run, "go build"):
			// replaycheck is this test binary; the step must build it onto the PATH.
			Expect(st.Run).To(ContainSubstring("./cmd/replaycheck"))
			Expect(st.Run).To(ContainSubstring("GITHUB_PATH"))
		default:
			script, err := expand(st.Run, matrix, env)
			Expect(err).NotTo(HaveOccurred())
			stepName, err := expand(st.Name, matrix, env)
			Expect(err).NotTo(HaveOccurred())
			outs[stepName] = shell(ws, fleetEnv(env), script, "bash", "--noprofile", "--norc", "-e", "-c")
		}
	}
	return ws, outs
}
