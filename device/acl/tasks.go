package acl

// Task types (aclmdlRITaskType), as hicann/runtime's include/external/acl/acl_rt.h numbers them.
const (
	taskDefault     = 0 // ACL_MODEL_RI_TASK_DEFAULT: any task but the types below (fills, copies, the runtime's own)
	taskKernel      = 1 // ACL_MODEL_RI_TASK_KERNEL: a Cube or Vector core kernel
	taskEventRecord = 2 // ACL_MODEL_RI_TASK_EVENT_RECORD
	taskEventWait   = 3 // ACL_MODEL_RI_TASK_EVENT_WAIT
	taskEventReset  = 4 // ACL_MODEL_RI_TASK_EVENT_RESET
	taskValueWrite  = 5 // ACL_MODEL_RI_TASK_VALUE_WRITE
	taskValueWait   = 6 // ACL_MODEL_RI_TASK_VALUE_WAIT
)

// taskKind is the device.GraphNode kind of a task of type t: kernel, event-record and event-wait
// tasks are their nodes; any other type, those a later runtime may add included, is a "task"
// node, which may be work (a fill, a copy, a value write) or the runtime's own.
func taskKind(t int) string {
	switch t {
	case taskKernel:
		return "kernel"
	case taskEventRecord:
		return "event-record"
	case taskEventWait:
		return "event-wait"
	}
	return "task"
}
