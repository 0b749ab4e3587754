package fake_test

import (
	"fmt"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device/fake"
)

// procQuery is one cuGetProcAddress question and the export that answers it: the base name, the
// CUDA version the caller was built for, the per-thread-default-stream flag (2), and the variant
// NVIDIA's cudaTypedefs.h (CUDA 12.6) gives that version.
type procQuery struct {
	name    string
	version int
	ptsz    bool
	want    string
}

// procQueries name every export of the fake but its fault-injection entry points, at least once.
var procQueries = []procQuery{
	{"cuInit", 12040, false, "cuInit"},
	{"cuDriverGetVersion", 12040, false, "cuDriverGetVersion"},
	{"cuDeviceGetCount", 12040, false, "cuDeviceGetCount"},
	{"cuDeviceGet", 12040, false, "cuDeviceGet"},
	{"cuDeviceGetName", 12040, false, "cuDeviceGetName"},
	{"cuDeviceTotalMem", 12040, false, "cuDeviceTotalMem_v2"},
	{"cuDevicePrimaryCtxRetain", 12040, false, "cuDevicePrimaryCtxRetain"},
	{"cuDevicePrimaryCtxRelease", 10020, false, "cuDevicePrimaryCtxRelease"},
	{"cuDevicePrimaryCtxRelease", 11000, false, "cuDevicePrimaryCtxRelease_v2"},
	{"cuCtxSetCurrent", 12040, false, "cuCtxSetCurrent"},
	{"cuCtxSynchronize", 12040, false, "cuCtxSynchronize"},
	{"cuMemGetInfo", 12040, false, "cuMemGetInfo_v2"},
	{"cuMemAlloc", 3010, false, "cuMemAlloc"},
	{"cuMemAlloc", 3020, false, "cuMemAlloc_v2"},
	{"cuMemAlloc", 12040, true, "cuMemAlloc_v2"}, // no stream: the flag changes nothing
	{"cuMemFree", 2000, false, "cuMemFree"},
	{"cuMemFree", 12040, false, "cuMemFree_v2"},
	{"cuMemAllocHost", 3000, false, "cuMemAllocHost"},
	{"cuMemAllocHost", 12040, false, "cuMemAllocHost_v2"},
	{"cuMemHostAlloc", 12040, false, "cuMemHostAlloc"},
	{"cuMemFreeHost", 12040, false, "cuMemFreeHost"},
	{"cuMemcpyHtoD", 12040, false, "cuMemcpyHtoD_v2"},
	{"cuMemcpyHtoD", 12040, true, "cuMemcpyHtoD_v2_ptds"},
	{"cuMemcpyDtoH", 12040, false, "cuMemcpyDtoH_v2"},
	{"cuMemcpyDtoH", 7000, true, "cuMemcpyDtoH_v2_ptds"},
	{"cuMemcpyAsync", 12040, false, "cuMemcpyAsync"},
	{"cuMemcpyAsync", 12040, true, "cuMemcpyAsync_ptsz"},
	{"cuMemcpyDtoDAsync", 12040, false, "cuMemcpyDtoDAsync_v2"},
	{"cuMemcpyDtoDAsync", 12040, true, "cuMemcpyDtoDAsync_v2_ptsz"},
	{"cuMemcpyHtoDAsync", 6050, true, "cuMemcpyHtoDAsync_v2"}, // no per-thread variant before 7000
	{"cuMemcpyHtoDAsync", 12040, false, "cuMemcpyHtoDAsync_v2"},
	{"cuMemcpyHtoDAsync", 12040, true, "cuMemcpyHtoDAsync_v2_ptsz"},
	{"cuMemcpyDtoHAsync", 12040, false, "cuMemcpyDtoHAsync_v2"},
	{"cuMemcpyDtoHAsync", 12040, true, "cuMemcpyDtoHAsync_v2_ptsz"},
	{"cuMemsetD8Async", 12040, false, "cuMemsetD8Async"},
	{"cuMemsetD8Async", 12040, true, "cuMemsetD8Async_ptsz"},
	{"cuMemsetD16Async", 12040, false, "cuMemsetD16Async"},
	{"cuMemsetD16Async", 12040, true, "cuMemsetD16Async_ptsz"},
	{"cuMemsetD32Async", 12040, false, "cuMemsetD32Async"},
	{"cuMemsetD32Async", 12040, true, "cuMemsetD32Async_ptsz"},
	{"cuMemAllocAsync", 11020, false, "cuMemAllocAsync"},
	{"cuMemAllocAsync", 12040, true, "cuMemAllocAsync_ptsz"},
	{"cuMemFreeAsync", 12040, false, "cuMemFreeAsync"},
	{"cuMemFreeAsync", 12040, true, "cuMemFreeAsync_ptsz"},
	{"cuMemAllocFromPoolAsync", 12040, false, "cuMemAllocFromPoolAsync"},
	{"cuMemAllocFromPoolAsync", 12040, true, "cuMemAllocFromPoolAsync_ptsz"},
	{"cuDeviceGetDefaultMemPool", 12040, false, "cuDeviceGetDefaultMemPool"},
	{"cuMemPoolCreate", 12040, false, "cuMemPoolCreate"},
	{"cuMemPoolDestroy", 12040, false, "cuMemPoolDestroy"},
	{"cuStreamCreate", 12040, false, "cuStreamCreate"},
	{"cuStreamDestroy", 12040, false, "cuStreamDestroy_v2"},
	{"cuStreamSynchronize", 12040, false, "cuStreamSynchronize"},
	{"cuStreamSynchronize", 12040, true, "cuStreamSynchronize_ptsz"},
	{"cuEventCreate", 12040, false, "cuEventCreate"},
	{"cuEventRecord", 12040, false, "cuEventRecord"},
	{"cuEventRecord", 12040, true, "cuEventRecord_ptsz"},
	{"cuEventRecordWithFlags", 12040, false, "cuEventRecordWithFlags"},
	{"cuEventRecordWithFlags", 12040, true, "cuEventRecordWithFlags_ptsz"},
	{"cuStreamWaitEvent", 12040, false, "cuStreamWaitEvent"},
	{"cuStreamWaitEvent", 12040, true, "cuStreamWaitEvent_ptsz"},
	{"cuEventQuery", 12040, false, "cuEventQuery"},
	{"cuEventSynchronize", 12040, false, "cuEventSynchronize"},
	{"cuEventDestroy", 12040, false, "cuEventDestroy_v2"},
	{"cuModuleLoadData", 12040, false, "cuModuleLoadData"},
	{"cuModuleUnload", 12040, false, "cuModuleUnload"},
	{"cuModuleGetFunction", 12040, false, "cuModuleGetFunction"},
	{"cuFuncGetParamInfo", 12040, false, "cuFuncGetParamInfo"},
	{"cuLaunchKernel", 12040, false, "cuLaunchKernel"},
	{"cuLaunchKernel", 12040, true, "cuLaunchKernel_ptsz"},
	{"cuLaunchKernelEx", 12040, false, "cuLaunchKernelEx"},
	{"cuLaunchKernelEx", 12040, true, "cuLaunchKernelEx_ptsz"},
	{"cuStreamBeginCapture", 10000, false, "cuStreamBeginCapture"},
	{"cuStreamBeginCapture", 10000, true, "cuStreamBeginCapture_ptsz"},
	{"cuStreamBeginCapture", 10010, false, "cuStreamBeginCapture_v2"},
	{"cuStreamBeginCapture", 12040, true, "cuStreamBeginCapture_v2_ptsz"},
	{"cuStreamEndCapture", 12040, false, "cuStreamEndCapture"},
	{"cuStreamEndCapture", 12040, true, "cuStreamEndCapture_ptsz"},
	{"cuStreamIsCapturing", 12040, false, "cuStreamIsCapturing"},
	{"cuStreamIsCapturing", 12040, true, "cuStreamIsCapturing_ptsz"},
	{"cuThreadExchangeStreamCaptureMode", 12040, false, "cuThreadExchangeStreamCaptureMode"},
	{"cuGraphInstantiate", 10000, false, "cuGraphInstantiate"},
	{"cuGraphInstantiate", 11040, false, "cuGraphInstantiate_v2"},
	{"cuGraphInstantiate", 12000, false, "cuGraphInstantiateWithFlags"},
	{"cuGraphInstantiateWithFlags", 12040, false, "cuGraphInstantiateWithFlags"},
	{"cuGraphLaunch", 12040, false, "cuGraphLaunch"},
	{"cuGraphLaunch", 12040, true, "cuGraphLaunch_ptsz"},
	{"cuGraphExecUpdate", 11080, false, "cuGraphExecUpdate"},
	{"cuGraphExecUpdate", 12000, false, "cuGraphExecUpdate_v2"},
	{"cuGraphGetNodes", 12040, false, "cuGraphGetNodes"},
	{"cuGraphNodeGetType", 12040, false, "cuGraphNodeGetType"},
	{"cuGraphMemsetNodeGetParams", 12040, false, "cuGraphMemsetNodeGetParams"},
	{"cuGraphMemcpyNodeGetParams", 12040, false, "cuGraphMemcpyNodeGetParams"},
	{"cuGraphExecDestroy", 12040, false, "cuGraphExecDestroy"},
	{"cuGraphDestroy", 12040, false, "cuGraphDestroy"},
	{"cuGetErrorName", 12040, false, "cuGetErrorName"},
	{"cuGetErrorString", 12040, false, "cuGetErrorString"},
	{"cuGetProcAddress", 11030, false, "cuGetProcAddress"},
	{"cuGetProcAddress", 12040, false, "cuGetProcAddress_v2"},
}

// procEnv writes queries as the test driver reads them (RC_TEST_PROCS).
func procEnv(queries []procQuery) string {
	var parts []string
	for _, q := range queries {
		flags := 0
		if q.ptsz {
			flags = 2
		}
		parts = append(parts, fmt.Sprintf("%s:%d:%d:%s", q.name, q.version, flags, q.want))
	}
	return "RC_TEST_PROCS=" + strings.Join(parts, ";")
}

var _ = Describe("libcuda.so.1's cuGetProcAddress", func() {
	It("has a question for every export but the fault-injection entry points", func() {
		var wants []string
		for _, q := range procQueries {
			wants = append(wants, q.want)
		}
		for _, name := range fake.CUDA.Exports() {
			if slices.Contains(fake.FaultEntryPoints, name) {
				continue
			}
			Expect(wants).To(ContainElement(name), "no cuGetProcAddress question answers %s", name)
		}
		for _, w := range wants {
			Expect(fake.CUDA.Exports()).To(ContainElement(w))
		}
	})

	It("answers each base name and version with the export dlsym finds, the fake's own, and not-found otherwise", func() {
		out, st := scenario(fake.CUDA, built.full[fake.CUDA], "procaddress", procEnv(procQueries))
		Expect(st.ExitCode()).To(Equal(0), out)
		Expect(out).To(ContainSubstring(fmt.Sprintf("queries %d\n", len(procQueries))))
	})

	It("fails the driver's way on a wrong answer (negative control)", func() {
		wrong := []procQuery{
			{"cuMemAlloc", 12040, false, "cuMemAlloc"},                    // the v1 variant for a v2 caller
			{"cuGraphInstantiate", 12040, false, "cuGraphInstantiate_v2"}, // 12000 is WithFlags
			{"cuLaunchKernel", 12040, true, "cuLaunchKernel"},             // the flag asks for _ptsz
		}
		out, st := scenario(fake.CUDA, built.full[fake.CUDA], "procaddress", procEnv(wrong))
		Expect(st.ExitCode()).To(Equal(1), out)
		Expect(strings.Count(out, "FAIL proc_queries")).To(Equal(2*len(wrong)), out)
	})

	It("does not find the export a missing-symbol build lacks", func() {
		out, st := scenario(fake.CUDA, built.missing[fake.CUDA], "procmissing")
		Expect(st.ExitCode()).To(Equal(0), out)
	})
})
