// Package probes is the probe language of replaycheck: its types, the strict loader that reads
// probe files into them, and the oracle that states what a probe means. The language itself is
// specified in docs/probe-language.md (replaycheck/v1); this comment specifies the loader.
//
// # Loading
//
// [Load] reads files and directories. A file is read whatever its name; a directory contributes
// its *.yaml and *.yml files in name order and is not descended into, so a baselines/ directory
// under a probe directory is not read as probes. A file named twice (directly and through its
// directory) is read once. Load reads every file even after a bad one and returns
//
//   - the sets of the files that have no problem, in the order read, and
//   - every problem of every file as [Diagnostics], sorted by file, line and column; nil when there
//     is none.
//
// A file with any problem contributes no set: nothing is loaded partially. [LoadFile] and [Parse]
// read one file the same way and return its set or its Diagnostics.
//
// Each [Diagnostic] prints as "file:line:col: rule: message". The position is the key or value at
// fault; a missing key is reported at the mapping that lacks it; range, axpy-size and race problems
// at the op (its kind key); probe-wide limits at the probe. YAML syntax errors carry the line the
// parser reports and column 1 (it reports no column); a file that cannot be read has no line. The
// file is printed as [FileText] writes it: quoted, with Go escapes, when it holds a control
// character or is not UTF-8, so that an escape sequence in a file name reaches no terminal.
//
// YAML anchors and aliases are followed, and a value reached through an alias is placed twice. A
// problem of the anchored value itself (a bad value, an unknown or missing key, a name repeated
// within it) is reported where the anchor defines it, once however many aliases use it: a problem
// found again word for word at the same place is neither listed nor counted again. A problem of
// one use of the value is reported at the alias that makes that use, the innermost alias within the
// probe: a probe, buffer, pool, stream, event, label, capture, platform family, checked buffer or
// key given again by an alias of an earlier one (at the alias, naming the first's line), and what
// the checks after decoding find in the ops, captures, buffers, replay, check, non-blocking,
// expect and faults it reaches (a freed, undeclared or still-live buffer, a range, a race, an
// undeclared stream...).
// A probe written as an alias of another (`- *base`) is only reported as a duplicate there: every
// other problem it has is its anchor's. Merge keys (<<) are not part of the language and are
// unknown keys.
//
// What the loader resolves, so that later layers see no gaps: a probe takes the keys it leaves out
// (replays, modes, guards) from its set's defaults, then from [DefaultReplays], [DefaultModes] and
// [DefaultGuards]; `capture:` becomes the one [Capture] named "main"; the captures of a phases list
// are the probe's Captures too, in order, and the list itself is [Probe.Phases]; the ops of its
// ops entries are each in the Ops of the capture its stream belongs to ([Stage.Into]), so that a
// capture left open by a begin entry lists its ops as a capture entry does; a capture's stream defaults to
// the probe's first stream and its end-stream to its stream; the stream of fill, copy, axpy, record,
// wait and sync ops defaults to the capture's stream inside a capture's ops and to the first stream
// elsewhere; replay.stream defaults to the first capture's stream and replay.order to each capture
// once in order, and each launch of it to replay.stream; buffer and alloc slots default to plain.
// Byte counts and offsets that an op leaves out stay nil: the executor resolves them with
// [Op.Resolve] when the op is issued. The stream name [DefaultStream] ("default") needs no
// declaration: it is the platform's default stream. expect.platforms and expect.modes are kept as
// given ([Expect] Platforms and Modes); [Expect.For] and [Instance.ExpectedOn] apply the most
// specific for a device's platform key and an instance's capture mode: platform × mode, then mode,
// then platform, then the probe's own, field by field.
//
// # Rules
//
// Every Diagnostic names one rule:
//
//	version               version is not exactly replaycheck/v1. Nothing else of such a file is checked.
//	yaml                  the file is not well-formed YAML, or holds more than one document.
//	unknown-key           a key the language does not define, at any level, or an unknown op kind;
//	                      the message lists the allowed keys. A platform family expect.platforms
//	                      does not know (PlatformFamilies; the message says which keys each covers);
//	                      a capture mode expect.modes or a family's modes does not know.
//	missing-key           a required key is missing: version, set, probes; a probe's name, hazard,
//	                      streams, expect and capture, captures or phases; a buffer's or pool's
//	                      bytes; a captures or phases capture entry's name; a replay order entry's capture; expect.guarded,
//	                      unless the probe runs with guards off only; an op's required fields.
//	bad-name              a set, probe, buffer, pool, stream, event, capture name or a label that is
//	                      not [a-z0-9][a-z0-9-]*; a declared stream named "default"; "default" in
//	                      non-blocking (the legacy stream is never non-blocking).
//	bad-value             a value of the wrong shape or outside its closed set: hazard, requires,
//	                      modes, guards (on/off), thread and end-thread (main/other), slot, host
//	                      (pageable/pinned), intent (replay/once), exchange-mode's mode, expect
//	                      outcomes, rejected-by classes, fill value (0..255), axpy a (uint32), a
//	                      replay count that is not an integer (ParseUint: decimal without a
//	                      leading 0, or 0x hex; fill values and a are written so too); an op
//	                      that is not a one-key map; a phases entry that is not a one-key map of
//	                      eager or capture, or an empty eager entry; an empty streams,
//	                      non-blocking, modes, guards, captures, check or replay order list; intent outside a
//	                      capture's ops; a slot other than plain on a pooled or host buffer; host
//	                      on a pooled buffer; an expect.platforms or expect.modes (or a family's
//	                      modes) that is not a mapping, or an entry of it that gives none of its
//	                      keys.
//	bad-size              a size or offset that is not a non-negative decimal integer of bytes,
//	                      without a leading 0, or such an integer with KiB, MiB, GiB, TiB (KB, MB,
//	                      k, hex, a leading 0, signs, fractions, overflow: ParseSize), a buffer
//	                      (declared or alloc) below 1 byte, a pool below 512 bytes.
//	bad-pattern           an init or write value that is not a pattern (ParsePattern).
//	duplicate             a repeated key in one mapping; a buffer, stream, event, probe or capture
//	                      name given twice; an alloc of a buffer that is still live (alloc after
//	                      its free is allowed); a set name already loaded from another file; a
//	                      repeated label, capability, non-blocking stream, mode, guard setting,
//	                      class or checked buffer; a platform family or capture mode given twice in
//	                      expect.
//	undeclared            an op, capture, end-stream, replay or the non-blocking list naming a
//	                      stream, an op naming an event, a buffer naming a pool, or an op or check
//	                      naming a buffer that the probe does not declare (or has not allocated
//	                      yet at that point).
//	range                 an op's offset and byte count leave its buffer, at the size the buffer
//	                      has when the op is issued.
//	axpy-size             axpy with x and y of different sizes, or not a multiple of 4 bytes.
//	use-after-free        an op or check naming a buffer after its free, unless allocated again.
//	memory                a fill or axpy naming host memory, or a copy between two host buffers:
//	                      a memset and the kernel work on device memory, a stream copy has a
//	                      device side.
//	pool                  the live blocks of a pool, each rounded up to device.PoolGranularity,
//	                      would exceed its segment at some point of the probe.
//	private-pool          a graph-private pool used outside a capture into it: an eager alloc or
//	                      grow from it, an alloc or grow in a capture into another pool, a
//	                      declared buffer in it, a capture naming a pool that is not private, a
//	                      private pool with host.
//	destroyed             a destroyed graph in replay.order, a graph destroyed twice, or every
//	                      graph destroyed.
//	capture-and-captures  a probe with both capture and captures.
//	phases                a phases list beside prepare, capture, captures or between (at each
//	                      of those keys); two eager entries in a row (at the second); a phases
//	                      list without a capture entry.
//	unknown-capture       replay.order naming a capture the probe does not have.
//	race                  two data ops of one capture's ops list that overlap, at least one writing,
//	                      with no order between them (below).
//	limit                 a buffer above Limits.MaxBufferBytes; all of a probe's buffers above
//	                      Limits.MaxTotalBytes; more than Limits.MaxOps ops in a probe; replays
//	                      above Limits.MaxReplays or below 1; a capture whose race check would
//	                      compare more than 20 million op pairs (many races: so the loader never
//	                      stalls); a
//	                      file above Limits.MaxFileBytes (from its size, before it is read) or
//	                      of more than Limits.MaxFileValues YAML values (counted before it is
//	                      parsed); more than MaxDiagnostics problems in one file (the first
//	                      MaxDiagnostics are listed);
//	                      mappings and lists nested deeper than MaxDepth, aliases followed.
//	encoding              a file with a NUL byte (binary) or that is not UTF-8, at the first bad
//	                      byte.
//	alias                 aliases that together expand the file by more than MaxAliasNodes nodes.
//	control-character     a C0 or C1 control character or DEL, other than newline and tab, in any
//	                      key or value: they would reach terminals and reports.
//	fault                 a faults entry that is not KIND@N (alloc-fail, launch-fail, device-lost,
//	                      hang; N from 1 to MaxFaultIndex, written as ParseUint reads), a replay
//	                      fault at a round the probe does not replay, or two faults that fire at
//	                      the same allocation or at the same round.
//	expect-mode           an expect.modes entry, or a family's modes entry, for a capture mode the
//	                      probe does not run; one giving guarded (unguarded) to a probe that runs
//	                      with guards off (on) only; one whose rejected-by names classes where no
//	                      instance it decides expects rejected (a conflict).
//	read                  a path that cannot be read.
//
// # Hostile input
//
// The loader refuses hostile files before the work they ask for, cheapest check first: the file's
// size from os.Stat (it is not read), then its bytes before YAML parses them (an upper bound of
// the YAML values they make, counted from their punctuation, against Limits.MaxFileValues; NUL;
// UTF-8), then aliases, depth and control characters in one linear walk of the parsed tree before
// anything is decoded (each anchor's expansion counted once), then each probe's op count from its
// YAML before its ops are decoded and checked. A file refused at one of these stages reports only
// that stage's problems. A file lists at most MaxDiagnostics problems, headed by one saying there
// are more; past that, nothing is formatted (the names an unknown name could have meant are not
// looked for).
//
// # Static checks in execution order
//
// Buffer names, liveness and sizes are followed through the probe in the order its ops are first
// issued: the declared buffers, the probe's stages ([Probe.Stages]: prepare, each capture's ops in
// declaration order and between; or the entries of its phases list in order), then replay.each twice (it runs before every round: what round 1 leaves, round 2
// meets). alloc adds a buffer, free removes it, grow to a larger size raises it (never lowers).
// Each op's ranges are resolved with [Op.Resolve] at the sizes of that point. The total-bytes
// limit sums, over every unpooled buffer name, the largest size it reaches, and every pool's
// segment.
//
// # Races
//
// Within one capture's ops list, two data ops (fill, copy, axpy) race when their byte spans
// ([Span.Overlaps]) overlap with at least one of them writing, and nothing orders them. Ops on one
// stream are ordered in list order. `record e` on stream s followed in the list by `wait e` on
// stream t orders everything before the record on s before everything after the wait on t, and
// chains of such pairs compose. Only events recorded inside the list count, and only when recorded
// by a stream that has joined the capture: the origin stream has joined, and a stream joins when it
// waits on such an event. Ops on a stream that never joins are therefore unordered with every other
// stream's ops. Spans are compared by buffer name, also across a free and a new alloc of the name:
// the oracle applies graph ops by name, and a new allocation may reuse the old address. A race is
// reported at the later op, naming both ops and the overlapping span; the oracle could not define
// the bytes such a probe leaves.
//
// The check keeps, for each stream and buffer, which of the stream's ops last wrote and last read
// each byte range. A stream's ops not ordered before a new op are compared with it one by one only
// when those ranges say that one of them touches what it does, so that two streams of 50,000 ops
// side by side cost about what one stream of 100,000 does.
package probes
