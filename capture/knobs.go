package capture

// Knobs: the engine's few internal switches, in one place. Each has a default fixed by a constant,
// and nothing package-level steers the engine: an instance holds its own copy (instance.knobs),
// taken from Options when a test tuned them (export_test.go's Tune, the one way tests set them) and
// the defaults otherwise. Two instances running side by side in one process, one of them tuned, do
// not see each other's.

const (
	// defaultReadChunk is the read-back chunk of a backend without device.Comparer (compare.go).
	defaultReadChunk = 4 << 20
	// defaultSegmentBytes is the least a goroutine of the localisation scans: 8 MiB takes
	// milliseconds, starting a goroutine microseconds, so nothing smaller is worth cutting (a round
	// figure, not a tuned one).
	defaultSegmentBytes = 8 << 20
	// defaultMinBatch is the fewest ops worth a batch (batches.go); fewer go one by one.
	defaultMinBatch = 8
)

// knobs are an instance's internal switches. The fields are exported for export_test.go's Knobs
// alias only; the type is not.
type knobs struct {
	// ReadChunk is the read-back chunk (bytes) of a backend without device.Comparer; tests make it
	// smaller than a buffer so that chunk boundaries fall inside it.
	ReadChunk int64
	// SegmentBytes is the least a goroutine of the localisation scans; tests make it small to cut
	// small buffers.
	SegmentBytes int
	// MinBatch is the fewest ops worth a batch; the equivalence spec makes a batch of every op that
	// can be one (1). NoBatches turns batches off: every op goes one by one (the spec's other
	// side).
	MinBatch  int
	NoBatches bool
	// BatchHook, when set, is told of every batch issued: its first op, how many ops it held, how many
	// took.
	BatchHook func(from, ops, took int)
	// SkewBatches has the oracle record each batch one op short: the equivalence spec's negative
	// control.
	SkewBatches bool
	// NoPrivatePools judges a private pool's blocks as an ordinary pool's (a freed block is stale),
	// and NoSharingRule drops the sharing rule (privatepool.go): their negative controls.
	NoPrivatePools bool
	NoSharingRule  bool
	// NoFingerprints verifies as on a device without the fingerprint extension (fingerprints.go):
	// the other side of the spec that compares both. FingerprintsMatch takes the oracle's
	// fingerprints for the device's, so that every chunk matches: its negative control.
	NoFingerprints    bool
	FingerprintsMatch bool
	// FingerprintAudit recomputes every chunk of the oracle's fingerprints each round and fails the
	// instance when one kept was stale; ForgetWrites marks nothing the rounds write, its negative
	// control.
	FingerprintAudit bool
	ForgetWrites     bool
}

// defaultKnobs are the knobs of every instance no test tuned.
func defaultKnobs() knobs {
	return knobs{ReadChunk: defaultReadChunk, SegmentBytes: defaultSegmentBytes, MinBatch: defaultMinBatch}
}

// knobs are the knobs an instance run with opt holds.
func (opt *Options) knobsOf() knobs {
	if opt.knobs != nil {
		return *opt.knobs
	}
	return defaultKnobs()
}
