package fingerprint

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
)

//go:embed testdata/vectors.json
var vectorsJSON []byte

// Vector is one test vector: a buffer and its fingerprints.
type Vector struct {
	Name  string
	Bytes int
	Seed  uint64
	// Flip is a byte whose lowest bit is flipped after the pattern is made; -1: none.
	Flip   int
	Chunks []uint64
}

// Input is the vector's buffer: Pattern(Bytes, Seed), with Flip flipped.
func (v Vector) Input() []byte {
	b := Pattern(v.Bytes, v.Seed)
	if v.Flip >= 0 {
		b[v.Flip] ^= 1
	}
	return b
}

// Vectors are the test vectors checked in (testdata/vectors.json; see the package doc for the
// command that writes them), for the tests of every implementation of the fingerprint.
func Vectors() ([]Vector, error) {
	var raw []struct {
		Name   string   `json:"name"`
		Bytes  int      `json:"bytes"`
		Seed   uint64   `json:"seed"`
		Flip   int      `json:"flip"`
		Chunks []string `json:"chunks"`
	}
	if err := json.Unmarshal(vectorsJSON, &raw); err != nil {
		return nil, fmt.Errorf("fingerprint: the test vectors: %w", err)
	}
	out := make([]Vector, len(raw))
	for i, r := range raw {
		v := Vector{Name: r.Name, Bytes: r.Bytes, Seed: r.Seed, Flip: r.Flip}
		if len(r.Chunks) != Chunks(int64(r.Bytes)) {
			return nil, fmt.Errorf("fingerprint: test vector %q has %d fingerprints for %d bytes", r.Name, len(r.Chunks), r.Bytes)
		}
		for _, h := range r.Chunks {
			f, err := strconv.ParseUint(h, 16, 64)
			if err != nil {
				return nil, fmt.Errorf("fingerprint: test vector %q: %w", r.Name, err)
			}
			v.Chunks = append(v.Chunks, f)
		}
		out[i] = v
	}
	return out, nil
}
