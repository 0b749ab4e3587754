package runtime

// PrivatePools is a runtime under test that keeps graph-private pools, as PyTorch's caching
// allocator does (torch.cuda.graph, torch_npu's NPUGraph): every allocation a capture makes is
// served from the capture's private pool, a block freed goes back to it, and only a later capture
// into the same pool takes it again. The engine says which reserved pools are private and which
// private pool each capture allocates from; the runtime's guards judge the blocks of those pools
// by it (see runtime/guard). A runtime without it serves a private pool as an ordinary one: the
// engine runs its guarded instances of probes with private pools as skipped.
type PrivatePools interface {
	// MakePrivate makes the reserved pool called name graph-private.
	MakePrivate(name string) error
	// CaptureInto names the private pool the next capture begun through the runtime allocates
	// from, "" for none. The runtime keeps it with that capture and with its graph, which holds
	// the pool until it is destroyed.
	CaptureInto(pool string)
}
