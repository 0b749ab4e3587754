package device

import "github.com/replaycheck/replaycheck/internal/enum"

// Kernel is one fill, copy or axpy of a batch handed to a device at once (KernelEnqueuer): the
// arguments its own call (Fill, Copy or Axpy) takes.
type Kernel struct {
	Kind KernelKind
	// Dst is the range written: a fill's or copy's destination, an axpy's y.
	Dst Ptr
	// Src is a copy's source or an axpy's x; unused by a fill.
	Src Ptr
	// Value is a fill's byte; A an axpy's factor.
	Value byte
	A     uint32
}

// KernelKind is which call a Kernel stands for.
type KernelKind uint8

const (
	KernelFill KernelKind = iota + 1
	KernelCopy
	KernelAxpy
)

var kernelKindNames = enum.New("kernel kind", "kernel",
	enum.Name(KernelFill, "Fill"), enum.Name(KernelCopy, "Copy"), enum.Name(KernelAxpy, "Axpy"))

// String is the name of the call the kind stands for.
func (k KernelKind) String() string { return kernelKindNames.String(k) }

// KernelEnqueuer is an optional capability of a Device: enqueuing a batch of kernels (fills, copies
// and axpys) on one stream from one thread in one call. A capture of 100,000 ops otherwise pays
// every layer's per-call cost (the watch, the runtime under test, the backend's lock) 100,000
// times.
//
// EnqueueKernels has exactly the effect of calling Fill, Copy or Axpy for each kernel in order,
// stopping at the first that fails: n is how many took effect, and err is the error of kernel n
// (nil when all did), the error that kernel's own call would have returned. A device that wraps
// another states it (Extensions.Kernels) only when every call it forwards may be forwarded as a
// batch: a wrapper that inherited it by embedding would never see the batch's calls, and
// ExtensionsOf drops it. EnqueueKernels falls back to one call per kernel.
type KernelEnqueuer interface {
	EnqueueKernels(t Thread, s Stream, ks []Kernel) (n int, err error)
}

// EnqueueKernels enqueues ks on s from t through d: by the batch d states (Extensions.Kernels),
// else one call per kernel (EnqueueEach).
func EnqueueKernels(d Device, t Thread, s Stream, ks []Kernel) (int, error) {
	if e := ExtensionsOf(d).Kernels; e != nil {
		return e.EnqueueKernels(t, s, ks)
	}
	return EnqueueEach(d, t, s, ks)
}

// EnqueueEach makes d's Fill, Copy or Axpy call for each kernel in order, stopping at the first
// that fails: the meaning of KernelEnqueuer, for a device with no faster way.
func EnqueueEach(d Device, t Thread, s Stream, ks []Kernel) (int, error) {
	for i := range ks {
		if err := enqueueOne(d, t, s, &ks[i]); err != nil {
			return i, err
		}
	}
	return len(ks), nil
}

// enqueueOne makes the call k stands for on d.
func enqueueOne(d Device, t Thread, s Stream, k *Kernel) error {
	switch k.Kind {
	case KernelFill:
		return d.Fill(t, s, k.Dst, k.Value)
	case KernelCopy:
		return d.Copy(t, s, k.Dst, k.Src)
	case KernelAxpy:
		return d.Axpy(t, s, k.Dst, k.Src, k.A)
	}
	return &Error{Op: "EnqueueKernels", Class: ClassInvalidValue, Detail: "unknown kernel kind " + k.Kind.String()}
}
