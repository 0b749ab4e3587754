package fake

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
)

// Library is one fake driver library.
type Library int

const (
	ACL Library = iota + 1
	CUDA
)

// Libraries lists both.
var Libraries = []Library{ACL, CUDA}

func (l Library) String() string {
	switch l {
	case ACL:
		return "acl"
	case CUDA:
		return "cuda"
	}
	return fmt.Sprintf("library(%d)", int(l))
}

// Profile is the simulator profile the library reproduces.
func (l Library) Profile() string {
	switch l {
	case ACL:
		return "cann"
	case CUDA:
		return "cuda"
	}
	return ""
}

// FileName is the library's file name, its soname.
func (l Library) FileName() string {
	switch l {
	case ACL:
		return "libascendcl.so"
	case CUDA:
		return "libcuda.so.1"
	}
	return ""
}

// front is the C source of the library's front end.
func (l Library) front() string {
	switch l {
	case ACL:
		return "acl.c"
	case CUDA:
		return "cuda.c"
	}
	return ""
}

// AxpyKernel is the kernel name cuModuleGetFunction finds in the fake libcuda.so.1.
const AxpyKernel = "replaycheck_axpy"

// Conditions are the simulator conditions the C core implements, in the order of its enum rc_cond
// (c/core.h): RC_COND_ and the name in upper case with '-' as '_'.
var Conditions = []string{
	"any-capture",
	"blocking-capture",
	"caller-began-capture",
	"caller-began-other-capture",
	"capture-copy-freed",
	"capture-fill-freed",
	"capture-invalidated",
	"default-stream",
	"default-stream-during-blocking-capture",
	"default-stream-during-capture",
	"default-stream-joins-capture",
	"end-from-other-thread",
	"event-captured",
	"event-in-other-capture",
	"event-recorded-outside",
	"fork-unjoined",
	"graph-range-freed",
	"graph-range-stale",
	"other-thread-began-capture",
	"other-thread-began-other-capture",
	"pageable-copy-in-capture",
	"stream-capturing",
	"stream-not-capturing",
	"stream-not-origin",
	"stream-outside-capture",
}

// InstantiationConditions are the EndCapture conditions that judge the graph's instantiation on
// CUDA: the other captures in progress at the end (the instantiation is an unsafe call) and the
// graph's own nodes (capture-fill-freed, capture-copy-freed). The fake libcuda answers their rules from
// cuGraphInstantiateWithFlags, after cuStreamEndCapture succeeded, as the driver does (the fake
// libascendcl, whose end makes the model, from aclmdlRICaptureEnd). The generator marks their
// rules .instantiation, and requires them to follow every other rejecting EndCapture rule, so
// that answering them a call later decides what the simulator's rule order decides.
var InstantiationConditions = []string{"caller-began-other-capture", "other-thread-began-other-capture", "capture-fill-freed", "capture-copy-freed"}

// crashSignals are the crashes a rule may name that the C core can raise: it faults, as a
// crashing driver does.
var crashSignals = []string{"SIGSEGV"}

// Calls are the device calls a rule may name, in the order of the C enum rc_op: RC_OP_ and the
// name in upper snake case.
var Calls = []string{
	"Malloc", "Free", "AllocHost", "FreeHost", "Write", "Read", "Fill", "Copy", "Axpy", "Record", "Wait",
	"SyncStream", "SyncDevice", "QueryEvent", "SyncEvent", "BeginCapture", "EndCapture", "Launch",
}

// CondEnum is the C enum constant of a condition.
func CondEnum(name string) string {
	return "RC_COND_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// OpEnum is the C enum constant of a call.
func OpEnum(call string) string {
	var b strings.Builder
	for i, r := range call {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return "RC_OP_" + b.String()
}

// platformCode is a code of the platform's own that the fake returns outside the profile, or that
// cuGetErrorName must know.
type platformCode struct {
	code       int
	name, text string
}

// platformCodes are the codes of docs/platforms.md, and those the front ends return
// themselves, for each library.
var platformCodes = map[Library][]platformCode{
	ACL: {
		{0, "ACL_SUCCESS", "success"},
		{100000, "ACL_ERROR_INVALID_PARAM", "invalid parameter"},
		{100002, "ACL_ERROR_REPEAT_INITIALIZE", "repeated initialization"},
		{107000, "ACL_ERROR_RT_PARAM_INVALID", "runtime parameter invalid"},
		{107001, "ACL_ERROR_RT_INVALID_DEVICEID", "invalid device id"},
		{107002, "ACL_ERROR_RT_CONTEXT_NULL", "current context null"},
		{107024, "ACL_ERROR_RT_CAPTURE_DEPENDENCY", "capture dependency"},
		{107025, "ACL_ERROR_RT_STREAM_UNJOINED", "stream unjoined"},
		{107026, "ACL_ERROR_RT_MODEL_CAPTURED", "model captured"},
		{107027, "ACL_ERROR_RT_STREAM_CAPTURED", "stream captured"},
		{107028, "ACL_ERROR_RT_EVENT_CAPTURED", "event captured"},
		{107029, "ACL_ERROR_RT_STREAM_NOT_CAPTURED", "stream not captured"},
		{107030, "ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT", "capture mode not supported"},
		{107031, "ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT", "implicit stream capture"},
		{107032, "ACL_ERROR_STREAM_CAPTURE_CONFLICT", "stream capture conflict"},
		{107036, "ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED", "stream capture unmatched"},
		{107037, "ACL_ERROR_RT_MODEL_RUNNING", "model running"},
		{107038, "ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD", "stream capture ended on the wrong thread"},
		{107041, "ACL_ERROR_RT_CAPTURE_MODE_BLOCK_ASYNC", "capture mode blocks the asynchronous call"},
		{200000, "ACL_ERROR_BAD_ALLOC", "bad allocation"},
		{200001, "ACL_ERROR_API_NOT_SUPPORT", "API not supported"},
		{200006, "ACL_ERROR_FEATURE_UNSUPPORTED", "feature unsupported"},
		{207000, "ACL_ERROR_RT_FEATURE_NOT_SUPPORT", "feature not supported"},
		{207001, "ACL_ERROR_RT_MEMORY_ALLOCATION", "memory allocation failed"},
		{207004, "ACL_ERROR_RT_NO_DEVICE", "no device"},
		{207018, "ACL_ERROR_RT_DEVICE_OOM", "device out of memory"},
		{507000, "ACL_ERROR_RT_INTERNAL_ERROR", "runtime internal error"},
		{507903, "ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED", "stream capture invalidated"},
	},
	CUDA: {
		{0, "CUDA_SUCCESS", "no error"},
		{1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
		{2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
		{3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
		{34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
		{101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
		{201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
		{218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
		{400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
		{401, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
		{500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
		{600, "CUDA_ERROR_NOT_READY", "device not ready"},
		{700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
		{801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
		{900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"},
		{901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture"},
		{902, "CUDA_ERROR_STREAM_CAPTURE_MERGE", "operation would result in a merge of separate capture sequences"},
		{903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", "capture was not ended in the same stream as it began"},
		{904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED", "capturing stream has unjoined work"},
		{905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION", "dependency created on uncaptured work in another stream"},
		{906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", "operation would make the legacy stream depend on a capturing blocking stream"},
		{907, "CUDA_ERROR_CAPTURED_EVENT", "operation not permitted on an event last recorded in a capturing stream"},
		{908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", "attempt to terminate a thread-local capture sequence from another thread"},
		{910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE", "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update"},
		{999, "CUDA_ERROR_UNKNOWN", "unknown error"},
	},
}

// Generate writes rules.h for lib from the simulator's embedded profile.
func Generate(lib Library) ([]byte, error) {
	p, err := sim.LoadProfile(lib.Profile())
	if err != nil {
		return nil, fmt.Errorf("fake: %v: %w", lib, err)
	}
	return generate(p, platformCodes[lib], Conditions)
}

// generate writes rules.h for profile p; implemented lists the conditions the C core knows.
func generate(p *sim.Profile, codes []platformCode, implemented []string) ([]byte, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	var b bytes.Buffer
	fmt.Fprintf(&b, "/* rules.h: generated by device/fake from the simulator's profile %q. DO NOT EDIT. */\n", p.Name)
	fmt.Fprintf(&b, "#define RC_PROFILE_NAME %s\n\n", cString(p.Name))
	b.WriteString("static const rc_rule rc_rules[] = {\n")
	firstInstantiation := 0 // the number of the first instantiation rule so far
	for i, r := range p.Rules {
		at := fmt.Sprintf("profile %s: rule %d (%s)", p.Name, i+1, r.Situation)
		if !slices.Contains(implemented, r.When) {
			bad("%s: condition %q is not implemented by the fake's C core (implemented: %s)", at, r.When, strings.Join(implemented, ", "))
			continue
		}
		instantiation := slices.Contains(InstantiationConditions, r.When)
		if r.Crash != "" && !slices.Contains(crashSignals, r.Crash) {
			bad("%s: crash %s: the fake's C core crashes with %s only", at, r.Crash, strings.Join(crashSignals, ", "))
		}
		if (r.When == "capture-fill-freed" || r.When == "capture-copy-freed") && !r.Allow && (len(r.Modes) > 0 || r.Invalidates) {
			// Judged at the instantiation, when cuStreamEndCapture has ended the capture: there is
			// no capture left to select by mode or to invalidate.
			bad("%s: condition %q takes neither modes nor invalidates in the fake", at, r.When)
		}
		switch {
		case instantiation && firstInstantiation == 0:
			firstInstantiation = i + 1
		case !instantiation && !r.Allow && firstInstantiation > 0 && slices.Contains(r.Calls, "EndCapture"):
			bad("%s: a rejecting EndCapture rule after rule %d, which the fake answers at the graph's instantiation, a call later: move it before", at, firstInstantiation)
		}
		var calls []string
		for _, c := range r.Calls {
			if !slices.Contains(Calls, c) {
				bad("%s: call %q is not one the fake's C core knows", at, c)
				continue
			}
			calls = append(calls, "RC_OP_BIT("+OpEnum(c)+")")
		}
		if len(calls) == 0 {
			calls = []string{"0"}
		}
		fmt.Fprintf(&b, "\t{/* rule %d */ .calls = %s, .cond = %s, .modes = %s, .caller_modes = %s, .pageable = %d, .allow = %d,\n",
			i+1, strings.Join(calls, " | "), CondEnum(r.When), modeMask(r.Modes), modeMask(r.CallerModes), b2i(r.Pageable), b2i(r.Allow))
		fmt.Fprintf(&b, "\t .freed_at_least = %d, .freed_below = %d, .instantiation = %d,\n",
			int64(r.FreedBytes.AtLeast), int64(r.FreedBytes.Below), b2i(instantiation))
		fmt.Fprintf(&b, "\t .code = %d, .name = %s, .class_name = %s, .invalidates = %d, .ends_capture = %d, .crash = %d,\n",
			r.Code, cString(r.Name), cString(string(r.Class)), b2i(r.Invalidates), b2i(r.EndsCapture), b2i(r.Crash != ""))
		fmt.Fprintf(&b, "\t .situation = %s},\n", cString(r.Situation))
	}
	b.WriteString("};\n\n")

	classes := make([]string, 0, len(p.Errors))
	for c := range p.Errors {
		classes = append(classes, string(c))
	}
	sort.Strings(classes)
	b.WriteString("static const rc_class_code rc_class_codes[] = {\n")
	for _, c := range classes {
		code := p.Errors[device.Class(c)]
		fmt.Fprintf(&b, "\t{%s, %d, %s},\n", cString(c), code.Code, cString(code.Name))
	}
	b.WriteString("};\n\n")

	names, err := codeTable(p, codes)
	if err != nil {
		errs = append(errs, err)
	}
	b.WriteString("static const rc_code_name rc_code_names[] = {\n")
	for _, c := range names {
		fmt.Fprintf(&b, "\t{%d, %s, %s},\n", c.code, cString(c.name), cString(c.text))
	}
	b.WriteString("};\n")
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("fake: generate rules.h: %w", err)
	}
	return b.Bytes(), nil
}

// codeTable merges the platform's codes with every code the profile names; one code with two
// names is an error.
func codeTable(p *sim.Profile, codes []platformCode) ([]platformCode, error) {
	byCode := map[int]platformCode{}
	var errs []error
	add := func(c platformCode, where string) {
		if old, ok := byCode[c.code]; ok {
			if old.name != c.name {
				errs = append(errs, fmt.Errorf("code %d is %s in %s but %s elsewhere", c.code, c.name, where, old.name))
			}
			return
		}
		if c.text == "" {
			c.text = strings.ToLower(strings.ReplaceAll(c.name, "_", " "))
		}
		byCode[c.code] = c
	}
	for _, c := range codes {
		add(c, "the platform's table")
	}
	for class, c := range p.Errors {
		add(platformCode{code: c.Code, name: c.Name}, fmt.Sprintf("profile %s errors (%s)", p.Name, class))
	}
	for i, r := range p.Rules {
		if !r.Allow && r.Crash == "" {
			add(platformCode{code: r.Code, name: r.Name}, fmt.Sprintf("profile %s rule %d", p.Name, i+1))
		}
	}
	out := make([]platformCode, 0, len(byCode))
	for _, c := range byCode {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].code < out[j].code })
	return out, errors.Join(errs...)
}

func modeMask(modes []device.CaptureMode) string {
	if len(modes) == 0 {
		return "0"
	}
	parts := make([]string, len(modes))
	for i, m := range modes {
		parts[i] = fmt.Sprintf("RC_MODE_BIT(%d)", m)
	}
	return strings.Join(parts, " | ")
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// cString quotes s as a C string literal: printable ASCII as is, everything else in octal.
func cString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c >= 0x20 && c < 0x7f && c != '?':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "\\%03o", c) // '?' too, so no trigraph can form
		}
	}
	b.WriteByte('"')
	return b.String()
}
