package fake

import (
	"embed"
	"fmt"
	"slices"

	"github.com/replaycheck/replaycheck/internal/cbuild"
)

//go:embed c/core.h c/core.c c/acl.c c/cuda.c
var sources embed.FS

// exports are the entry points each library exports, as docs/platforms.md names them, plus
// the host-memory, async-copy and version calls the bindings use, the graph-introspection
// parameter calls (cuGraphMemsetNodeGetParams, cuGraphMemcpyNodeGetParams) and the fakes' own
// fault-injection entry points (FaultEntryPoints), which no real driver has.
var exports = map[Library][]string{
	ACL: {
		"aclInit", "aclFinalize", "aclGetRecentErrMsg",
		"aclrtSetDevice", "aclrtResetDevice", "aclrtGetDeviceCount", "aclrtGetMemInfo",
		"aclrtCreateStream", "aclrtDestroyStream", "aclrtSynchronizeStream", "aclrtSynchronizeDevice",
		"aclrtMalloc", "aclrtFree", "aclrtMallocHost", "aclrtFreeHost",
		"aclrtMemcpy", "aclrtMemcpyAsync", "aclrtMemsetAsync",
		"aclrtCreateEventExWithFlag", "aclrtCreateEvent", "aclrtDestroyEvent", "aclrtSynchronizeEvent",
		"aclrtRecordEvent", "aclrtStreamWaitEvent", "aclrtQueryEventStatus",
		"aclmdlRICaptureBegin", "aclmdlRICaptureGetInfo", "aclmdlRICaptureEnd", "aclmdlRICaptureThreadExchangeMode",
		"aclmdlRIExecuteAsync", "aclmdlRIDestroy",
		"aclrtGetSocName", "aclsysGetVersionStr",
		// CANN 9.1's graph reading (trial entry points), which the acl binding finds optionally.
		"aclmdlRIGetStreams", "aclmdlRIGetTasksByStream", "aclmdlRITaskGetType",
		// Kernels as watch's interposer meets them (Ascend C custom operators).
		"aclrtBinaryLoadFromData", "aclrtBinaryGetFunction", "aclrtBinaryUnLoad", "aclrtLaunchKernel",
		"aclrtLaunchKernelV2", "aclrtLaunchKernelWithHostArgs", "aclrtLaunchKernelWithConfig",
		"aclrtKernelArgsInit", "aclrtKernelArgsAppend", "aclrtKernelArgsFinalize",
		"replaycheck_fake_inject", "replaycheck_fake_fired",
	},
	CUDA: {
		"cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName", "cuDeviceTotalMem_v2",
		"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2",
		"cuCtxSetCurrent", "cuCtxSynchronize",
		"cuMemAlloc_v2", "cuMemFree_v2", "cuMemAllocHost_v2", "cuMemFreeHost", "cuMemGetInfo_v2",
		"cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoDAsync_v2", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2",
		"cuMemsetD8Async",
		"cuStreamCreate", "cuStreamDestroy_v2", "cuStreamSynchronize",
		"cuEventCreate", "cuEventRecord", "cuStreamWaitEvent", "cuEventQuery", "cuEventSynchronize", "cuEventDestroy_v2",
		"cuModuleLoadData", "cuModuleUnload", "cuModuleGetFunction", "cuLaunchKernel",
		"cuStreamBeginCapture_v2", "cuStreamEndCapture", "cuStreamIsCapturing", "cuThreadExchangeStreamCaptureMode",
		"cuGraphInstantiateWithFlags", "cuGraphLaunch", "cuGraphGetNodes", "cuGraphNodeGetType",
		"cuGraphMemsetNodeGetParams", "cuGraphMemcpyNodeGetParams",
		"cuGraphExecDestroy", "cuGraphDestroy",
		"cuGetErrorName", "cuGetErrorString",
		// What watch's interposer meets in real programs: cuGetProcAddress (how the runtime
		// library finds every entry point), the v1 names old binaries bind to, stream-ordered
		// allocation, the other copies, memsets and launches, graph update.
		"cuGetProcAddress", "cuGetProcAddress_v2",
		"cuMemAlloc", "cuMemFree", "cuMemAllocHost", "cuMemHostAlloc",
		"cuMemAllocAsync", "cuMemFreeAsync", "cuMemAllocFromPoolAsync",
		"cuDeviceGetDefaultMemPool", "cuMemPoolCreate", "cuMemPoolDestroy",
		"cuMemcpyAsync", "cuMemsetD16Async", "cuMemsetD32Async",
		"cuFuncGetParamInfo", "cuLaunchKernelEx", "cuEventRecordWithFlags",
		"cuStreamBeginCapture", "cuGraphInstantiate", "cuGraphInstantiate_v2",
		"cuGraphExecUpdate", "cuGraphExecUpdate_v2",
		// The per-thread-default-stream variants (_ptsz; _ptds for the synchronous copies).
		"cuMemcpyHtoD_v2_ptds", "cuMemcpyDtoH_v2_ptds",
		"cuMemcpyDtoDAsync_v2_ptsz", "cuMemcpyHtoDAsync_v2_ptsz", "cuMemcpyDtoHAsync_v2_ptsz", "cuMemcpyAsync_ptsz",
		"cuMemsetD8Async_ptsz", "cuMemsetD16Async_ptsz", "cuMemsetD32Async_ptsz",
		"cuLaunchKernel_ptsz", "cuLaunchKernelEx_ptsz",
		"cuStreamBeginCapture_ptsz", "cuStreamBeginCapture_v2_ptsz", "cuStreamEndCapture_ptsz", "cuStreamIsCapturing_ptsz",
		"cuGraphLaunch_ptsz", "cuEventRecord_ptsz", "cuEventRecordWithFlags_ptsz", "cuStreamWaitEvent_ptsz",
		"cuStreamSynchronize_ptsz", "cuMemAllocAsync_ptsz", "cuMemFreeAsync_ptsz", "cuMemAllocFromPoolAsync_ptsz",
		"replaycheck_fake_inject", "replaycheck_fake_fired",
	},
}

// FaultEntryPoints are the fakes' fault-injection entry points (see the package doc), exported by
// both libraries: a binding that finds them can inject faults.
var FaultEntryPoints = []string{"replaycheck_fake_inject", "replaycheck_fake_fired"}

// Exports lists the entry points lib exports, in no particular order.
func (l Library) Exports() []string { return slices.Clone(exports[l]) }

// Variant is one build of a library. The zero Variant is the full library.
type Variant struct {
	// Omit names one entry point the library does not export.
	Omit string
	// Stub is the library with no driver behind it: CUDA's stub library (cuInit fails 34), ACL
	// without a device (aclrtGetDeviceCount fails 207004).
	Stub bool
}

// String names the variant as a directory: "full", "missing-<symbol>", "stub".
func (v Variant) String() string {
	switch {
	case v.Stub && v.Omit != "":
		return "stub-missing-" + v.Omit
	case v.Stub:
		return "stub"
	case v.Omit != "":
		return "missing-" + v.Omit
	}
	return "full"
}

// Build writes lib's sources and generated rules.h into a directory under dir, compiles them with
// $CC (else cc) into dir/lib.FileName(), and returns that path. The sources are removed after a
// successful build; a failed build leaves them and says where.
func Build(dir string, lib Library, v Variant) (string, error) {
	if lib.FileName() == "" {
		return "", fmt.Errorf("fake: unknown %v", lib)
	}
	if v.Omit != "" && !slices.Contains(exports[lib], v.Omit) {
		return "", fmt.Errorf("fake: %v does not export %q, so it cannot be omitted", lib, v.Omit)
	}
	rules, err := Generate(lib)
	if err != nil {
		return "", err
	}
	return build(dir, lib, v, rules)
}

// build compiles lib with the given rules.h into dir/lib.FileName(), as Build does.
func build(dir string, lib Library, v Variant, rules []byte) (string, error) {
	files := map[string][]byte{"rules.h": rules}
	for _, name := range []string{"core.h", "core.c", lib.front()} {
		data, err := sources.ReadFile("c/" + name)
		if err != nil {
			return "", fmt.Errorf("fake: %w", err)
		}
		files[name] = data
	}
	var args []string
	if v.Stub {
		args = append(args, "-DRC_STUB")
	}
	if v.Omit != "" {
		// Exact names take precedence over the wildcard: only v.Omit becomes local.
		files["omit.map"] = fmt.Appendf(nil, "{ global: *; local: %s; };\n", v.Omit)
		args = append(args, "-Wl,--version-script=omit.map")
		// cuGetProcAddress answers as a driver without the entry point would.
		args = append(args, fmt.Sprintf("-DRC_OMIT=%q", v.Omit))
	}
	return cbuild.Build(cbuild.Library{
		What: fmt.Sprintf("fake: build %v (%v)", lib, v), Dir: dir, Name: lib.FileName(),
		Sources: files, Args: append(args, "core.c", lib.front()),
	})
}
