package sim

import (
	"context"
	"fmt"

	"github.com/replaycheck/replaycheck/device"
)

// Options configure the simulated backend. The zero value is a single 16 GiB device with the cann
// profile and deterministic replay.
type Options struct {
	// Profile names an embedded platform profile (see Profiles); "" means "cann".
	Profile string
	// ProfileYAML, when set, is a profile document used instead of the embedded one (to try a
	// corrected rule before it is committed, or in tests).
	ProfileYAML []byte
	// Memory is each device's simulated memory in bytes; 0 means 16 GiB. At most 1 TiB.
	Memory int64
	// Devices is how many devices Open accepts; 0 means 1.
	Devices int
	// Seed 0 replays a graph's nodes in capture order. A non-zero seed picks among the nodes whose
	// dependencies are done at random, reproducibly for the seed, to expose missing dependencies.
	Seed uint64
	// Fingerprints makes each device state the fingerprint extension (device.Fingerprinter): the
	// engine then verifies as it does across a GPU's link, by fingerprints and reading back only
	// the chunks that differ. Off by default: comparing in place costs less here.
	Fingerprints bool
}

const (
	defaultProfile = "cann"
	defaultMemory  = 16 << 30
	maxDevices     = 64
)

// backend opens simulated devices.
type backend struct {
	opts    Options
	profile *Profile
}

// New returns the simulated backend. An unknown profile name, an invalid ProfileYAML or an
// out-of-range option is an error here, before any device is opened.
func New(opts Options) (device.Backend, error) {
	if opts.Profile == "" {
		opts.Profile = defaultProfile
	}
	if opts.Memory == 0 {
		opts.Memory = defaultMemory
	}
	if opts.Devices == 0 {
		opts.Devices = 1
	}
	if opts.Memory < Granularity || opts.Memory > addressStride {
		return nil, fmt.Errorf("sim: memory %d bytes out of range [%d, %d]", opts.Memory, Granularity, int64(addressStride))
	}
	if opts.Devices < 1 || opts.Devices > maxDevices {
		return nil, fmt.Errorf("sim: devices %d out of range [1, %d]", opts.Devices, maxDevices)
	}
	var (
		p   *Profile
		err error
	)
	if opts.ProfileYAML != nil {
		p, err = ParseProfile(opts.ProfileYAML)
		if err != nil {
			err = fmt.Errorf("sim: profile document: %w", err)
		}
	} else {
		p, err = LoadProfile(opts.Profile)
	}
	if err != nil {
		return nil, err
	}
	return &backend{opts: opts, profile: p}, nil
}

func (b *backend) Name() string { return "sim" }

// Close releases nothing: the simulator holds no outside resource.
func (b *backend) Close() error { return nil }

// Source is "built in": the simulator is part of every binary.
func (b *backend) Source() string { return "built in" }

// Info describes device index: the simulator, its profile and its memory.
func (b *backend) Info(ctx context.Context, index int) (device.DeviceInfo, error) {
	if err := ctx.Err(); err != nil {
		return device.DeviceInfo{}, err
	}
	if index < 0 || index >= b.opts.Devices {
		return device.DeviceInfo{}, b.indexError("Info", index)
	}
	return device.DeviceInfo{
		Index: index, Name: fmt.Sprintf("sim device %d (profile %s: %s)", index, b.profile.Name, b.profile.Description),
		Memory: b.opts.Memory, Runtime: "simulator", Platform: "sim/" + b.profile.Name,
	}, nil
}

func (b *backend) indexError(op string, index int) error {
	code := b.profile.Errors[device.ClassInvalidValue]
	return &device.Error{
		Backend: "sim", Op: op, Code: code.Code, Name: code.Name, Class: device.ClassInvalidValue,
		Detail: fmt.Sprintf("device index %d out of range: the backend has %d device(s)", index, b.opts.Devices),
	}
}

func (b *backend) Devices(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return b.opts.Devices, nil
}

// Open returns a new *Device. Each Open creates an independent device: opening one index twice
// gives two devices that share nothing.
func (b *backend) Open(ctx context.Context, index int) (device.Device, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if index < 0 || index >= b.opts.Devices {
		return nil, b.indexError("Open", index)
	}
	return newDevice(index, b.opts, b.profile), nil
}
