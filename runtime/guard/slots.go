package guard

import (
	"errors"
	"fmt"
	"github.com/replaycheck/replaycheck/internal/plural"
	"github.com/replaycheck/replaycheck/runtime"
	"slices"

	"github.com/replaycheck/replaycheck/device"
)

// slotState is what one slot holds. A slot that holds nothing is not kept.
type slotState struct {
	slot runtime.Slot
	key  string
	ptr  device.Ptr
}

// hold makes st's slot hold st's buffer, and drop empties the slot named key: every change of
// what a slot holds goes through them, so that the slot log records it.
func (d *Device) hold(st *slotState) {
	d.slots[st.key] = st
	d.slotChanged(st.key)
}

func (d *Device) drop(key string) {
	delete(d.slots, key)
	d.slotChanged(key)
}

// slotLogKeep is how many slot changes the log keeps: a caller further behind reads every slot.
const slotLogKeep = 4096

// slotChanged logs a change of what the slot named key holds: the version moves by one, and the
// log keeps the key, dropping its older half when full.
func (d *Device) slotChanged(key string) {
	if len(d.slotLog) == slotLogKeep {
		d.slotLog = append(d.slotLog[:0], d.slotLog[slotLogKeep/2:]...)
		d.slotLogBase += slotLogKeep / 2
	}
	d.slotLog = append(d.slotLog, key)
}

// SlotsVersion is a number that moves whenever what a slot holds changes (Holds would answer
// differently for some key), and only then: one step per change.
func (d *Device) SlotsVersion() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.slotLogBase + uint64(len(d.slotLog))
}

// SlotsChangedSince lists the slots whose holdings changed after version v (a key once per
// change, in order) and the version now; ok is false when v is older than the changes kept, or
// not a version the Device gave. A caller that keeps every slot's state, such as the engine's
// snapshot a refusal is checked against, rereads only those.
func (d *Device) SlotsChangedSince(v uint64) (keys []string, now uint64, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now = d.slotLogBase + uint64(len(d.slotLog))
	if v < d.slotLogBase || v > now {
		return nil, now, false
	}
	return slices.Clone(d.slotLog[v-d.slotLogBase:]), now, true
}

// Holds reports what the slot named key holds: its kind and buffer. ok is false for an empty slot.
func (d *Device) Holds(key string) (slot runtime.Slot, p device.Ptr, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if st := d.slots[key]; st != nil {
		return st.slot, st.ptr, true
	}
	return 0, device.Ptr{}, false
}

// holderOf returns the slot holding the buffer that starts at addr, or nil.
func (d *Device) holderOf(addr uint64) *slotState {
	for _, st := range d.slots {
		if st.ptr.Addr == addr {
			return st
		}
	}
	return nil
}

// refuseRelease refuses, in kernel mode, to free what a runtime.Retained slot or committed
// runtime.Arena region holds: a graph may hold its address for the context's whole life.
func (d *Device) refuseRelease(op string, st *slotState) error {
	switch {
	case st.slot == runtime.Retained && d.guarding(d.off.RetainedSlot):
		return refusal(runtime.GuardRetained, op, "retained slot %q holds %v for the context's life: kernel mode never frees it", st.key, st.ptr)
	case st.slot == runtime.Arena && d.guarding(d.off.ArenaBank):
		return refusal(runtime.GuardArena, op, "arena region %q is committed at %v: kernel mode never releases it", st.key, st.ptr)
	}
	return nil
}

// lookup returns the state of the slot named key after checking that the caller's view of it (kind
// and buffer) matches the guard's; a mismatch is the caller's bug, reported without side effect.
func (d *Device) lookup(op string, slot runtime.Slot, key string, cur device.Ptr) (*slotState, error) {
	st := d.slots[key]
	var held device.Ptr
	if st != nil {
		if st.slot != slot {
			return nil, guardError(device.ClassInvalidValue, op, "key %q names a %v slot, not a %v slot", key, st.slot, slot)
		}
		held = st.ptr
	}
	if cur != held {
		return nil, guardError(device.ClassInvalidValue, op, "%v slot %q holds %v, not %v", slot, key, describePtr(held), describePtr(cur))
	}
	return st, nil
}

func describePtr(p device.Ptr) string {
	if p.IsZero() {
		return "nothing"
	}
	return p.String()
}

func checkRequest(op string, slot runtime.Slot, key string, bytes int64) error {
	switch {
	case !slot.Valid():
		return guardError(device.ClassInvalidValue, op, "unknown %v", slot)
	case key == "":
		return guardError(device.ClassInvalidValue, op, "a %v slot needs a key", slot)
	case bytes < 0:
		return guardError(device.ClassInvalidValue, op, "%v slot %q: negative request of %d bytes", slot, key, bytes)
	}
	return nil
}

// Provision is the growth and first-allocation path of the buffer held in the slot named key. cur
// is what the caller holds there (the zero Ptr for an empty slot) and must match what the guard
// holds. It returns the buffer to use and how the request was served; see the package doc for the
// rules of each slot and mode. A refusal or an invalid request returns cur and runtime.NotServed
// and leaves the slot, its buffer and the allocator as they were. A re-base whose allocation fails
// after the free returns the zero Ptr: the slot is empty then, and the error says so.
func (d *Device) Provision(t device.Thread, slot runtime.Slot, key string, cur device.Ptr, bytes int64) (device.Ptr, runtime.Served, error) {
	const op = "Provision"
	if err := checkRequest(op, slot, key, bytes); err != nil {
		return cur, runtime.NotServed, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.retired {
		return cur, runtime.NotServed, guardError(device.ClassInvalidState, op, "the context is retired: slot %q cannot be provisioned", key)
	}
	st, err := d.lookup(op, slot, key, cur)
	if err != nil {
		return cur, runtime.NotServed, err
	}
	if slot == runtime.Arena {
		ptrs, served, err := d.commit(t, op, []runtime.Region{{Key: key, Bytes: bytes}})
		if ptrs == nil {
			return cur, runtime.NotServed, err
		}
		// Published; err, if any, is about freeing the re-based block.
		return ptrs[0], served[0], err
	}
	switch {
	case st != nil && bytes <= st.ptr.Bytes:
		return st.ptr, runtime.InPlace, nil
	case st == nil && bytes == 0:
		return device.Ptr{}, runtime.InPlace, nil
	case st != nil && slot == runtime.Retained && d.guarding(d.off.RetainedSlot):
		// Refused ahead of the free: the buffer stays where a captured graph may expect it.
		return cur, runtime.NotServed, refusal(runtime.GuardRetained, op, "retained slot %q holds %v (capacity %d bytes); growth to %d bytes would re-base it: refused before anything was freed",
			key, st.ptr, st.ptr.Bytes, bytes)
	}
	if err := d.watchAllocator(op); err != nil {
		return cur, runtime.NotServed, err
	}
	if st == nil {
		p, err := d.inner.Malloc(t, bytes)
		if err != nil {
			return device.Ptr{}, runtime.NotServed, fmt.Errorf("%s: first allocation of %v slot %q (%d bytes): %w", op, slot, key, bytes, err)
		}
		d.ledger.add(p)
		d.hold(&slotState{slot: slot, key: key, ptr: p})
		return p, runtime.Allocated, nil
	}
	if err := d.inner.Free(t, st.ptr); err != nil {
		return cur, runtime.NotServed, fmt.Errorf("%s: re-base of %v slot %q: free of %v: %w", op, slot, key, st.ptr, err)
	}
	d.ledger.remove(st.ptr.Addr)
	d.drop(key)
	p, err := d.inner.Malloc(t, bytes)
	if err != nil {
		// Free + malloc cannot be undone: the slot is empty now, and the error says so.
		return device.Ptr{}, runtime.NotServed, fmt.Errorf("%s: re-base of %v slot %q: freed %v, then the allocation of %d bytes failed; the slot is empty: %w",
			op, slot, key, st.ptr, bytes, err)
	}
	d.ledger.add(p)
	d.hold(&slotState{slot: slot, key: key, ptr: p})
	return p, runtime.Rebased, nil
}

// Release frees the buffer p held in the slot named key and empties the slot. In kernel mode a
// runtime.Retained buffer and a committed runtime.Arena region are refused. Releasing an empty slot
// (p zero) does nothing.
func (d *Device) Release(t device.Thread, slot runtime.Slot, key string, p device.Ptr) error {
	const op = "Release"
	if err := checkRequest(op, slot, key, 0); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	st, err := d.lookup(op, slot, key, p)
	if err != nil || st == nil {
		return err
	}
	if err := d.refuseRelease(op, st); err != nil {
		return err
	}
	if err := d.watchAllocator(op); err != nil {
		return err
	}
	if err := d.inner.Free(t, st.ptr); err != nil {
		return fmt.Errorf("%s: %v slot %q: free of %v: %w", op, slot, key, st.ptr, err)
	}
	d.ledger.remove(st.ptr.Addr)
	d.drop(key)
	return nil
}

// CommitBank commits the arena regions and returns each region's buffer, in order (the zero Ptr for
// a zero request on an uncommitted region). See the package doc for the rules; a refusal or a
// failure changes no region, and a failure frees every allocation the call made.
func (d *Device) CommitBank(t device.Thread, regions []runtime.Region) ([]device.Ptr, error) {
	const op = "CommitBank"
	seen := map[string]bool{}
	for _, r := range regions {
		if err := checkRequest(op, runtime.Arena, r.Key, r.Bytes); err != nil {
			return nil, err
		}
		if seen[r.Key] {
			return nil, guardError(device.ClassInvalidValue, op, "arena region %q is named twice", r.Key)
		}
		seen[r.Key] = true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.retired {
		return nil, guardError(device.ClassInvalidState, op, "the context is retired: the bank cannot be committed")
	}
	ptrs, _, err := d.commit(t, op, regions)
	return ptrs, err
}

// commit plans, allocates, then publishes: nothing is visible, and nothing old is freed, until
// every allocation the bank needs has succeeded, so a failure can be rolled back completely.
func (d *Device) commit(t device.Thread, op string, regions []runtime.Region) ([]device.Ptr, []runtime.Served, error) {
	ptrs := make([]device.Ptr, len(regions))
	served := make([]runtime.Served, len(regions))
	var need []int // regions that need a new block
	for i, r := range regions {
		st := d.slots[r.Key]
		if st != nil && st.slot != runtime.Arena {
			return nil, nil, guardError(device.ClassInvalidValue, op, "key %q names a %v slot, not an arena region", r.Key, st.slot)
		}
		switch {
		case st != nil && r.Bytes <= st.ptr.Bytes:
			ptrs[i], served[i] = st.ptr, runtime.InPlace
		case st == nil && r.Bytes == 0:
			served[i] = runtime.InPlace
		case st == nil:
			served[i] = runtime.Allocated
			need = append(need, i)
		case d.guarding(d.off.ArenaBank):
			// Checked for every region before any allocation or free, so the peers stay as they were.
			return nil, nil, refusal(runtime.GuardArena, op, "arena region %q is committed at %v with capacity %d bytes; a request of %d bytes exceeds it: refused before any allocation or free, no region of the %d changed",
				r.Key, st.ptr, st.ptr.Bytes, r.Bytes, len(regions))
		default:
			served[i] = runtime.Rebased
			need = append(need, i)
		}
	}
	if len(need) == 0 {
		return ptrs, served, nil
	}
	if err := d.watchAllocator(op); err != nil {
		return nil, nil, err
	}
	for n, i := range need {
		p, err := d.inner.Malloc(t, regions[i].Bytes)
		if err != nil {
			return nil, nil, d.rollback(t, op, regions[i], err, need[:n], ptrs)
		}
		ptrs[i] = p
	}
	var old []device.Ptr
	for _, i := range need {
		key := regions[i].Key
		if st := d.slots[key]; st != nil {
			old = append(old, st.ptr)
		}
		d.ledger.add(ptrs[i])
		d.hold(&slotState{slot: runtime.Arena, key: key, ptr: ptrs[i]})
	}
	var errs []error
	for _, p := range old {
		if err := d.inner.Free(t, p); err != nil {
			errs = append(errs, fmt.Errorf("free of the re-based block %v: %w", p, err))
			continue
		}
		d.ledger.remove(p.Addr)
	}
	if len(errs) > 0 {
		return ptrs, served, fmt.Errorf("%s: the bank is published, but: %w", op, errors.Join(errs...))
	}
	return ptrs, served, nil
}

// rollback frees the blocks this commit allocated (regions made, in ptrs) after an allocation
// failed.
func (d *Device) rollback(t device.Thread, op string, failed runtime.Region, cause error, made []int, ptrs []device.Ptr) error {
	var errs []error
	for _, i := range made {
		if err := d.inner.Free(t, ptrs[i]); err != nil {
			errs = append(errs, fmt.Errorf("rollback free of %v: %w", ptrs[i], err))
		}
	}
	err := fmt.Errorf("%s: allocation of arena region %q (%d bytes) failed; rolled back %s of this commit, no region changed: %w",
		op, failed.Key, failed.Bytes, plural.Count(len(made), "allocation"), cause)
	if len(errs) > 0 {
		return errors.Join(append([]error{err}, errs...)...)
	}
	return err
}

// Retire ends the context's life: it frees every buffer a slot holds, in either mode,
// runtime.Retained and runtime.Arena included, and every pool's segment, as a context's exit does.
// Afterwards Provision and CommitBank fail with device.ClassInvalidState. Retire is refused in
// kernel mode while a capture is active; a second Retire does nothing.
func (d *Device) Retire(t device.Thread) error {
	const op = "Retire"
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.retired {
		return nil
	}
	if err := d.watchAllocator(op); err != nil {
		return err
	}
	keys := make([]string, 0, len(d.slots))
	for k := range d.slots {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var errs []error
	for _, k := range keys {
		st := d.slots[k]
		if err := d.inner.Free(t, st.ptr); err != nil {
			errs = append(errs, fmt.Errorf("%v slot %q: free of %v: %w", st.slot, k, st.ptr, err))
			continue
		}
		d.ledger.remove(st.ptr.Addr)
		d.drop(k)
	}
	errs = append(errs, d.releasePools(t)...)
	d.retired = true
	if len(errs) > 0 {
		return fmt.Errorf("%s: %w", op, errors.Join(errs...))
	}
	return nil
}
