// Package seed builds the seed runtime plugins: C shared libraries implementing replaycheck's
// runtime plugin ABI (include/replaycheck/runtime.h), for `replaycheck run --runtime PATH.so`.
//
// The reference plugin ("reference") re-states in C the rules of replaycheck's built-in guards
// (runtime/guard): the execution mode given at open (program: everything through, growth re-bases;
// kernel: the guards), pass-through of every device call it does not refuse, refusals decided
// before any state changes, plain, retained and arena slots with Provision, Release and the arena
// bank, pools (best fit in device.PoolGranularity units, the lowest address among equals,
// coalescing), host memory in the residency ledger, the capture watch, the residency check with
// allocation generations, replay isolation, Retire, the slot log (ABI 2's slots_changed: the keys
// of the last 4,096 slot changes, as runtime/guard keeps them), and the rule behind each refusal
// (ABI 4's refusal_rule), named as the built-in guard of the same rule is (runtime.Guards). Run
// through the catalog it must give the built-in guards' outcome for every instance, refused by the
// same guard at the same step, with its slot log checked against every slot before every guarded
// call (capture.Options.CheckSlotLog).
//
// Each other plugin is the reference with one defect, the kind a team's own runtime has:
//
//   - arena-rollback-on-refusal: a capacity refusal on an arena region first releases every
//     committed region of the bank, then refuses (a refusal with a side effect);
//   - retained-free-before-refuse: a retained slot's growth frees the buffer, then is refused;
//   - no-capture-watch: allocator calls and off-capture work go through during a capture;
//   - pointer-equality-residency: the residency check asks only whether each captured range is
//     still allocated, so a free and a re-allocation at the same address passes;
//   - no-retained-slot: a retained slot's buffer grows by free + malloc and may be released or
//     freed, as a plain one's. The residency check then refuses the replay of the graph that
//     captured it: still refused, by the wrong rule at the wrong step, which only a probe's
//     expect.refused-by catches.
//
// All six come from the same C sources in c/, the defects selected with -D flags: seed.c, the
// reference rules; defects.c (defects.h), each defect's code, called from seed.c where it strikes
// and doing nothing without its flag; hooks.c (hooks.h), the test hooks below; grow.c (grow.h), the
// growable arrays, every size overflow-checked; seed.h, the state they share. The package has no
// cgo: Build writes the embedded sources to a directory and runs $CC (else cc) on the four .c
// files, as device/fake does for the fake drivers. The ABI header comes from package include, which
// embeds include/replaycheck/runtime.h itself. `make plugins` builds all six into build/plugins/.
//
// Every plugin faults with SIGSEGV, a real invalid access, on entering the entry point that
// REPLAYCHECK_SEED_CRASH names (malloc, free, begin_capture, end_capture, launch, fill, copy or
// provision), as the fake drivers do with REPLAYCHECK_FAKE_CRASH: how the tests of
// `replaycheck run --isolate` crash a runtime plugin. Unset, it changes nothing.
//
// Where the C reference says things differently from runtime/guard: errors of the inner device are
// returned unchanged, as the ABI asks, where the Go guard wraps them with what it was doing
// (Provision, CommitBank, Retire); a failed Retire returns the first inner error, after freeing
// everything else, where the Go guard joins them all; host memory for the plugin's own bookkeeping
// that cannot be had, or whose size would not fit in a size_t, aborts the process. Refusal and
// misuse messages say what runtime/guard's Details say, in the same words, without its Op and
// Backend (the loader names the call).
package seed
