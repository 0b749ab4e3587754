package backends_test

import (
	"context"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/runtime/backends"
)

func TestNamesAreOpenable(t *testing.T) {
	names := backends.Names()
	if len(names) == 0 || names[0] != "sim" {
		t.Fatalf("Names() = %v, want sim first", names)
	}
	for _, name := range names {
		b, err := backends.Open(name, backends.Config{})
		if err != nil {
			t.Fatalf("Open(%q) of a listed backend: %v", name, err)
		}
		if b.Name() != name {
			t.Errorf("Open(%q).Name() = %q", name, b.Name())
		}
	}
	// Names hands out a copy: a caller cannot change what the package accepts.
	names[0] = "mutated"
	if backends.Names()[0] != "sim" {
		t.Error("Names() exposes the package's own slice")
	}
}

func TestSimOpensADevice(t *testing.T) {
	for _, profile := range []string{"", "cann", "cuda"} {
		b, err := backends.Open("sim", backends.Config{Profile: profile, Seed: 7, Memory: 1 << 20})
		if err != nil {
			t.Fatalf("profile %q: %v", profile, err)
		}
		dev, err := b.Open(context.Background(), 0)
		if err != nil {
			t.Fatalf("profile %q: opening device 0: %v", profile, err)
		}
		want := profile
		if want == "" {
			want = backends.DefaultProfile
		}
		if !strings.Contains(dev.Describe(), want) {
			t.Errorf("profile %q: device %q does not name profile %q", profile, dev.Describe(), want)
		}
		if err := dev.Close(); err != nil {
			t.Errorf("profile %q: closing device: %v", profile, err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  backends.Config
		want []string
	}{
		{"acl", backends.Config{}, []string{`backend "acl" is not built into this binary yet`}},
		{"cuda", backends.Config{}, []string{`backend "cuda" is not built into this binary yet`}},
		{"tpu", backends.Config{}, []string{`unknown backend "tpu"`, "sim", "acl", "cuda"}},
		{"", backends.Config{}, []string{`unknown backend ""`}},
		{"sim", backends.Config{Profile: "rocm"}, []string{"sim", `"rocm"`, "cann", "cuda"}},
	} {
		b, err := backends.Open(tc.name, tc.cfg)
		if err == nil {
			t.Errorf("Open(%q, %+v) = %v, want an error", tc.name, tc.cfg, b.Name())
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Open(%q, %+v) error %q does not mention %q", tc.name, tc.cfg, err, w)
			}
		}
	}
}
