package cuda_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/cuda"
	"github.com/replaycheck/replaycheck/device/fake"
)

// BenchmarkEqualShapes times Equal (device.Comparer) over 256 MiB for pinned chunks of 4 to 32
// MiB compared by 4 to 16 goroutines, each against one plain read of the same bytes into Go memory
// (the ratio is the read's time over Equal's): the data behind the chunk and goroutine counts the
// bindings use. With REPLAYCHECK_HARDWARE=cuda on the host's driver, every shape; else only the
// bindings' own shape on the fake library, whose figures say nothing about a GPU.
func BenchmarkEqualShapes(b *testing.B) {
	const n = 256 << 20
	opts := cuda.Options{}
	chunks, counts := []int64{4 << 20, 8 << 20, 16 << 20, 32 << 20}, []int{4, 8, 16}
	if os.Getenv("REPLAYCHECK_HARDWARE") != "cuda" {
		chunks, counts = []int64{16 << 20}, []int{16}
		path, err := fake.Build(b.TempDir(), fake.CUDA, fake.Variant{})
		if err != nil {
			b.Skip(err)
		}
		opts.Library = path
	}
	be, err := cuda.New(opts)
	if err != nil {
		b.Skip(err)
	}
	b.Cleanup(func() { be.Close() })
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(i*11 + 3)
	}
	host := make([]byte, n)
	for _, chunk := range chunks {
		for _, workers := range counts {
			b.Run(fmt.Sprintf("chunk=%dMiB/workers=%d", chunk>>20, workers), func(b *testing.B) {
				defer cuda.SetCompareShape(chunk, workers)()
				d, err := be.Open(context.Background(), 0)
				if err != nil {
					b.Fatal(err)
				}
				defer d.Close()
				p, err := d.Malloc(device.Main, n)
				if err != nil {
					b.Fatal(err)
				}
				if err := d.Write(device.Main, p, want); err != nil {
					b.Fatal(err)
				}
				cmp := d.(device.Comparer)
				equal := func() {
					if eq, err := cmp.Equal(device.Main, p, want); err != nil || !eq {
						b.Fatal("not equal", err)
					}
				}
				read := func() {
					if err := d.Read(device.Main, host, p); err != nil {
						b.Fatal(err)
					}
				}
				equal()
				read()
				b.SetBytes(n)
				var took, base float64
				b.ResetTimer()
				for range b.N {
					t := timed(equal)
					took += t
					b.StopTimer()
					base += timed(read)
					b.StartTimer()
				}
				b.ReportMetric(base/took, "x-throughput-of-plain-read")
				b.ReportMetric(float64(n)*float64(b.N)/took/1e9, "GB/s")
			})
		}
	}
}

// timed is f's wall time in seconds.
func timed(f func()) float64 {
	start := time.Now()
	f()
	return time.Since(start).Seconds()
}
