// Package bindtest holds the specs the ACL and CUDA bindings share, so that they are written
// once and run by each binding's suite: over the fake driver library of device/fake, and with
// REPLAYCHECK_HARDWARE=<backend> over the real driver. A suite describes its binding in a Binding
// and calls Run once, at package level; what only one binding does stays in its own suite, which
// uses the Suite's fake libraries and helpers (Open, OpenLogged, Calls).
//
// Test-only: only _test.go files import it.
package bindtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"
	gomegatypes "github.com/onsi/gomega/types"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/conformance"
	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/internal/dl"
)

// EnvHardware names the environment variable that turns on the specs on the real driver:
// REPLAYCHECK_HARDWARE=acl or =cuda (make device-check sets it). Without it no hardware is
// touched.
const EnvHardware = "REPLAYCHECK_HARDWARE"

// Binding is what the shared specs need to know of one binding.
type Binding struct {
	// Fake is the fake library of the binding (fake.ACL, fake.CUDA): its String is the backend's
	// name and REPLAYCHECK_HARDWARE's value, its Profile the simulator's profile.
	Fake fake.Library
	// New is the binding's New with Options{Library: library}; "" is Options{}, the search.
	New func(library string) (device.Backend, error)
	// EnvLibrary names the environment variable that overrides the search.
	EnvLibrary string
	// ErrNoLibrary is the binding's sentinel of a library that cannot be loaded.
	ErrNoLibrary error
	// Lookup is the binding's code table.
	Lookup func(code int) (string, device.Class)
	// Missing is a required entry point: the "missing" fake omits it.
	Missing string
	// Variants are further fakes BeforeSuite builds, by name (Libs.Extra).
	Variants map[string]fake.Variant
	// Kernels says the binding launches the axpy kernel (CUDA); without it Axpy fails
	// not-supported (ACL).
	Kernels bool
	// Calls are the entry points of the calls the thread spec makes.
	Calls Entries
	// Injected are the codes the injected-codes spec makes Malloc's entry point answer, with
	// each one's class.
	Injected map[int]device.Class
	// Detail says what the binding's error detail is for an injected code, and why.
	Detail func(code int) (matcher gomegatypes.GomegaMatcher, why string)
	// Conformance are the binding's conformance options, fake and hardware alike (Memory,
	// Labels and ErrorCode are the suite's).
	Conformance conformance.Options
	// PlatformPrefix begins every platform key of the binding ("acl/cann-", "cuda/").
	PlatformPrefix string
}

// Entries name the binding's entry points for the device calls the specs make.
type Entries struct {
	Init         string   // the first call of every open ("aclInit")
	Bind         string   // what a worker calls on its own thread to use the device
	CreateStream string   // CreateStream's
	Malloc       string   // Malloc's
	Fill         string   // Fill's
	BeginCapture string   // BeginCapture's
	EndCapture   string   // EndCapture's
	OnMain       []string // called once each at open, on the Main worker's thread
}

// Libs are the fake builds a suite shares, made once by BeforeSuite: the full library, a second
// copy of it for the specs that read the call log (the fake reads REPLAYCHECK_FAKE_LOG at a copy's
// first call), the stub (no driver behind it), one without Binding.Missing, and
// Binding.Variants by name.
type Libs struct {
	Full, Logged, Stub, Missing string
	Extra                       map[string]string
}

// Suite is one binding's run of the shared specs.
type Suite struct {
	Binding
	// OnHardware is REPLAYCHECK_HARDWARE naming this binding.
	OnHardware bool
	// Libs are the fakes, built by BeforeSuite.
	Libs Libs
	// Hardware is the real driver the binding's own search finds, opened by BeforeSuite (before
	// any fake loads) when OnHardware.
	Hardware device.Backend
}

// Run registers the shared specs for b, with the BeforeSuite that builds the fakes and the
// ReportAfterSuite that sums up the hardware specs: call it once, at package level.
func Run(b Binding) *Suite {
	s := &Suite{Binding: b, OnHardware: os.Getenv(EnvHardware) == b.Fake.String()}
	BeforeSuite(s.build)
	s.opening()
	s.aDevice()
	s.threads()
	s.conformance()
	s.hardware()
	ReportAfterSuite("hardware specs", s.report)
	return s
}

func (s *Suite) name() string { return s.Fake.String() }

// build is the BeforeSuite: the hardware first, then the fakes.
func (s *Suite) build() {
	if s.OnHardware {
		// First, before any fake loads: a fake's soname is the driver's too, and the dynamic
		// loader answers dlopen of that soname with a library of that soname already loaded.
		b, err := s.New("")
		Expect(err).NotTo(HaveOccurred(), "%s=%s, but the binding's search finds no usable driver library", EnvHardware, s.name())
		s.Hardware = b
		DeferCleanup(b.Close)
	}
	dir := GinkgoT().TempDir()
	s.Libs.Extra = map[string]string{}
	type build struct {
		name    string
		variant fake.Variant
	}
	builds := []build{{"full", fake.Variant{}}, {"stub", fake.Variant{Stub: true}}, {"missing", fake.Variant{Omit: s.Missing}}}
	for _, name := range slices.Sorted(maps.Keys(s.Variants)) {
		builds = append(builds, build{name, s.Variants[name]})
	}
	var wg sync.WaitGroup
	out := make([]string, len(builds))
	errs := make([]error, len(builds))
	for i, v := range builds {
		wg.Go(func() { out[i], errs[i] = fake.Build(filepath.Join(dir, v.name), s.Fake, v.variant) })
	}
	wg.Wait()
	Expect(errors.Join(errs...)).NotTo(HaveOccurred())
	s.Libs.Full, s.Libs.Stub, s.Libs.Missing = out[0], out[1], out[2]
	for i, v := range builds[3:] {
		s.Libs.Extra[v.name] = out[3+i]
	}
	// The logged copy is the full library's file under another name: a file of its own, loaded
	// apart from the full library's.
	data, err := os.ReadFile(s.Libs.Full)
	Expect(err).NotTo(HaveOccurred())
	s.Libs.Logged = filepath.Join(dir, "logged", filepath.Base(s.Libs.Full))
	Expect(os.MkdirAll(filepath.Dir(s.Libs.Logged), 0o755)).To(Succeed())
	Expect(os.WriteFile(s.Libs.Logged, data, 0o755)).To(Succeed())
}

// Open opens device 0 of the library at path; both close when the spec ends.
func (s *Suite) Open(ctx context.Context, path string) (device.Backend, device.Device) {
	GinkgoHelper()
	b, err := s.New(path)
	Expect(err).NotTo(HaveOccurred())
	d, err := b.Open(ctx, 0)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		Expect(d.Close()).To(Succeed())
		Expect(b.Close()).To(Succeed())
	})
	return b, d
}

// OpenLogged opens device 0 of the logged copy of the fake with its calls appended to a fresh
// file, which Calls reads.
func (s *Suite) OpenLogged(ctx context.Context) (device.Device, string) {
	GinkgoHelper()
	log := filepath.Join(GinkgoT().TempDir(), "calls.log")
	GinkgoT().Setenv("REPLAYCHECK_FAKE_LOG", log)
	_, d := s.Open(ctx, s.Libs.Logged)
	Expect(Calls(log)).To(HaveKey(s.Calls.Init), "the logged fake was loaded before this spec set REPLAYCHECK_FAKE_LOG")
	return d, log
}

// Calls reads a call log (fake.ReadLog): for each entry point, the kernel thread ids of its
// calls, in order.
func Calls(path string) map[string][]int {
	GinkgoHelper()
	entries, err := fake.ReadLog(path)
	Expect(err).NotTo(HaveOccurred())
	return fake.Callers(entries)
}

// Profile is the simulator's profile the fakes' tables are generated from.
func Profile(name string) *sim.Profile {
	p, err := sim.LoadProfile(name)
	if err != nil {
		panic(err)
	}
	return p
}

// CodeTable registers the spec that the binding's code table and the simulator's profile state
// the same platform facts: every code the profile answers with has the same name and class in
// the table, so the two cannot drift. It needs no library, so a build without cgo runs it too.
func CodeTable(profile string, lookup func(code int) (string, device.Class)) bool {
	return Describe("the code table", func() {
		It("agrees with the simulator's "+profile+" profile on every code the profile uses", func() {
			p, err := sim.LoadProfile(profile)
			Expect(err).NotTo(HaveOccurred())
			for class, c := range p.Errors {
				name, got := lookup(c.Code)
				Expect([]any{name, got}).To(Equal([]any{c.Name, class}), "profile error code %d", c.Code)
			}
			for _, r := range p.Rules {
				if r.Allow || r.Crash != "" { // a crash answers no code
					continue
				}
				name, got := lookup(r.Code)
				Expect([]any{name, got}).To(Equal([]any{r.Name, r.Class}), "rule %q", r.Situation)
			}
		})
	})
}

func (s *Suite) opening() {
	Describe("opening", func() {
		It("loads the library named by $"+s.EnvLibrary, func() {
			GinkgoT().Setenv(s.EnvLibrary, s.Libs.Full)
			b, err := s.New("")
			Expect(err).NotTo(HaveOccurred())
			Expect(b.Source()).To(Equal(s.Libs.Full))
			Expect(b.Close()).To(Succeed())
		})

		It("fails on a library without a required symbol, naming it", func() {
			_, err := s.New(s.Libs.Missing)
			var missing *dl.MissingError
			Expect(errors.As(err, &missing)).To(BeTrue(), "%v", err)
			Expect(missing.Symbols).To(Equal([]string{s.Missing}))
			Expect(errors.Is(err, s.ErrNoLibrary)).To(BeFalse())
		})
	})
}

func (s *Suite) aDevice() {
	Describe("a device", func() {
		var d device.Device
		BeforeEach(func(ctx SpecContext) { _, d = s.Open(ctx, s.Libs.Full) })

		It("round-trips data through Write, Fill, Copy, pinned and pageable host memory and Read", func() {
			x, err := d.Malloc(device.Main, 64)
			Expect(err).NotTo(HaveOccurred())
			y, err := d.Malloc(device.Other, 64)
			Expect(err).NotTo(HaveOccurred())
			st, err := d.CreateStream(device.Main, device.Blocking)
			Expect(err).NotTo(HaveOccurred())
			Expect(d.Write(device.Main, x, bytes.Repeat([]byte{3}, 64))).To(Succeed())
			Expect(d.Fill(device.Main, st, x.Slice(0, 16), 9)).To(Succeed())
			Expect(d.Copy(device.Main, st, y, x)).To(Succeed())
			got := make([]byte, 64)
			Expect(d.Read(device.Other, got, y)).To(Succeed())
			Expect(got).To(Equal(append(bytes.Repeat([]byte{9}, 16), bytes.Repeat([]byte{3}, 48)...)))
			Expect(device.HostMemories()).To(ConsistOf(device.Pinned, device.Pageable))
			for _, kind := range device.HostMemories() {
				h, err := d.AllocHost(device.Main, 32, kind)
				Expect(err).NotTo(HaveOccurred())
				Expect(d.HostWrite(h, bytes.Repeat([]byte{7}, 32))).To(Succeed())
				Expect(d.Copy(device.Main, st, x, h)).To(Succeed()) // 32 bytes: the shorter side
				Expect(d.Fill(device.Main, st, x, 1)).To(Succeed())
				Expect(d.Copy(device.Main, st, h.Slice(0, 8), x)).To(Succeed())
				Expect(d.SyncStream(device.Main, st)).To(Succeed())
				out := make([]byte, 32)
				Expect(d.HostRead(out, h)).To(Succeed())
				Expect(out).To(Equal(append(bytes.Repeat([]byte{1}, 8), bytes.Repeat([]byte{7}, 24)...)), "%v", kind)
				Expect(d.FreeHost(device.Other, h)).To(Succeed())
			}
			c := d.Counters()
			Expect(c.LiveAllocs).To(Equal(int64(2)))
			Expect(c.LiveBytes).To(Equal(int64(128)))
			Expect(c.HostAllocs).To(Equal(int64(2)))
			Expect(c.LiveHostAllocs).To(BeZero())
			if !s.Kernels {
				Expect(d.Axpy(device.Main, st, x, y, 2)).To(MatchError(ContainSubstring("not-supported")))
			}
		})

		for _, m := range device.CaptureModes() {
			It("captures, reports and replays in "+m.String()+" mode", func() {
				st, _ := d.CreateStream(device.Main, device.Blocking)
				x, _ := d.Malloc(device.Main, 16)
				Expect(d.Write(device.Main, x, make([]byte, 16))).To(Succeed())
				Expect(d.BeginCapture(device.Main, st, m)).To(Succeed())
				info, err := d.CaptureInfo(device.Other, st)
				Expect(err).NotTo(HaveOccurred())
				Expect(info).To(Equal(device.CaptureInfo{Status: device.CaptureActive, ID: info.ID, Origin: st, Mode: m}))
				Expect(info.ID).NotTo(BeZero())
				Expect(d.Fill(device.Main, st, x, 5)).To(Succeed())
				g, err := d.EndCapture(device.Main, st)
				Expect(err).NotTo(HaveOccurred())
				Expect(g).NotTo(BeZero())
				got := make([]byte, 16)
				Expect(d.Read(device.Main, got, x)).To(Succeed())
				Expect(got).To(Equal(make([]byte, 16)), "captured work did not run")
				Expect(d.Launch(device.Other, g, st)).To(Succeed())
				Expect(d.Read(device.Main, got, x)).To(Succeed())
				Expect(got).To(Equal(bytes.Repeat([]byte{5}, 16)))
				Expect(d.DestroyGraph(device.Main, g)).To(Succeed())
				Expect(d.Counters().Launches).To(Equal(int64(1)))
			})
		}

		It("answers injected codes through the one table", func() {
			for code, want := range s.Injected {
				GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", s.Calls.Malloc+"="+strconv.Itoa(code))
				_, err := d.Malloc(device.Main, 8)
				e, ok := device.AsError(err)
				Expect(ok).To(BeTrue())
				Expect(e.Code).To(Equal(code))
				name, _ := s.Lookup(code)
				Expect(e.Name).To(Equal(name))
				Expect(e.Class).To(Equal(want), "code %d", code)
				detail, why := s.Detail(code)
				Expect(e.Detail).To(detail, why)
			}
			GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "")
			Expect(d.Counters().Mallocs).To(BeZero())
			_, err := d.Malloc(device.Main, 8)
			Expect(err).NotTo(HaveOccurred())
		})
	})
}

func (s *Suite) threads() {
	Describe("threads", func() {
		It("issues every call from the OS thread its Thread names, with the device bound there", func(ctx SpecContext) {
			d, log := s.OpenLogged(ctx)
			st, _ := d.CreateStream(device.Main, device.Blocking)
			x, _ := d.Malloc(device.Other, 16)
			Expect(d.Fill(device.Other, st, x, 1)).To(Succeed())
			Expect(d.BeginCapture(device.Main, st, device.Relaxed)).To(Succeed())
			Expect(d.Fill(device.Other, st, x, 2)).To(Succeed())
			_, err := d.EndCapture(device.Other, st)
			Expect(err).NotTo(HaveOccurred())
			c := Calls(log)
			main, other := c[s.Calls.CreateStream][0], c[s.Calls.Malloc][0]
			Expect(main).NotTo(Equal(other))
			Expect(c[s.Calls.Bind]).To(ContainElements(main, other), "each worker called %s on its own thread", s.Calls.Bind)
			for _, entry := range s.Calls.OnMain {
				Expect(c[entry]).To(Equal([]int{main}), entry)
			}
			Expect(c[s.Calls.Fill]).To(Equal([]int{other, other}))
			Expect(c[s.Calls.BeginCapture]).To(Equal([]int{main}))
			Expect(c[s.Calls.EndCapture]).To(Equal([]int{other}))
		})
	})
}

// conformance runs the conformance suite on the full fake, and with REPLAYCHECK_HARDWARE on
// device 0 of the driver the binding's own search finds, opened by BeforeSuite.
func (s *Suite) conformance() {
	// Each spec closes its backend after its device (the cleanups run last registered first), so
	// that it leaves no library loaded.
	opts := s.Conformance
	opts.Memory, opts.Labels, opts.ErrorCode = 1<<30, []string{"fake"}, Profile(s.Fake.Profile()).ErrorCode
	conformance.Describe(s.name()+" fake", func(ctx context.Context) (device.Device, error) {
		b, err := s.New(s.Libs.Full)
		if err != nil {
			return nil, err
		}
		d, err := b.Open(ctx, 0)
		if err != nil {
			return nil, errors.Join(err, b.Close())
		}
		DeferCleanup(b.Close)
		return d, nil
	}, opts)

	if !s.OnHardware {
		return
	}
	opts = s.Conformance
	opts.Labels = []string{"hardware"}
	conformance.Describe(s.name()+" hardware", func(ctx context.Context) (device.Device, error) {
		if s.Hardware == nil {
			return nil, errors.New("no hardware backend: BeforeSuite did not open it")
		}
		d, err := s.Hardware.Open(ctx, 0)
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(d.Platform(), "-replaycheck-fake") {
			return nil, errors.Join(fmt.Errorf("%s is the fake, not hardware", s.Hardware.Source()), d.Close())
		}
		return d, nil
	}, opts)
}

func (s *Suite) hardware() {
	if !s.OnHardware {
		return
	}
	Describe("the hardware", Label("hardware"), func() {
		It("is what the binding's search finds, a real device with a platform key of its own", func(ctx SpecContext) {
			n, err := s.Hardware.Devices(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(BeNumerically(">", 0))
			info, err := s.Hardware.Info(ctx, 0)
			Expect(err).NotTo(HaveOccurred())
			AddReportEntry("device 0", fmt.Sprintf("%+v from %s", info, s.Hardware.Source()))
			Expect(info.Name).NotTo(BeEmpty())
			Expect(info.Platform).To(HavePrefix(s.PlatformPrefix))
			Expect(info.Platform).NotTo(HaveSuffix("-replaycheck-fake"))
			if s.Kernels {
				d, err := s.Hardware.Open(ctx, 0)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(d.Close)
				Expect(d.Capabilities().Kernels).To(BeTrue(), "the driver JIT-compiles the axpy PTX")
			}
		})
	})
}

// report is the ReportAfterSuite: with REPLAYCHECK_HARDWARE, one line says what ran on the
// hardware, for make device-check's summary: "hardware specs: N passed, N failed, N skipped".
func (s *Suite) report(r Report) {
	if !s.OnHardware {
		return
	}
	var passed, failed, skipped int
	for _, sp := range r.SpecReports {
		switch {
		case sp.LeafNodeType != types.NodeTypeIt || !slices.Contains(sp.Labels(), "hardware"):
		case sp.State.Is(types.SpecStatePassed):
			passed++
		case sp.State.Is(types.SpecStateSkipped | types.SpecStatePending):
			skipped++
		default:
			failed++
		}
	}
	fmt.Printf("\nhardware specs: %d passed, %d failed, %d skipped\n", passed, failed, skipped)
}
